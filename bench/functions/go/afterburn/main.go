// Command afterburn is the Go benchmark function on the AfterBurn library: an empty body gets
// a greeting, any other body is streamed back as it arrives (so a 100 MiB echo holds only a
// buffer's worth in memory).
package main

import (
	"io"
	"log"
	"net/http"
	"strconv"

	"github.com/afterburn-dev/afterburn/go/afterburn"
)

var greeting = []byte("Hello, world!\n")

func main() {
	log.Fatal(afterburn.Serve(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		if r.ContentLength == 0 {
			w.Write(greeting)
			return
		}
		if r.ContentLength > 0 {
			w.Header().Set("Content-Length", strconv.FormatInt(r.ContentLength, 10))
		}
		io.Copy(w, r.Body)
	})))
}
