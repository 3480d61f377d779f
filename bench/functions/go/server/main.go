// Command server is a minimal Go net/http function: the "ceiling" baseline of the benchmarks
// (answering directly, no child at all) and Go's upstream in the HTTP proxy baseline. It
// answers an empty body with a greeting and echoes any other body. It listens on
// 127.0.0.1:$PORT and logs "server: listening on ADDR".
package main

import (
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
)

var greeting = []byte("Hello, world!\n")

func main() {
	ln, err := net.Listen("tcp", "127.0.0.1:"+os.Getenv("PORT"))
	if err != nil {
		log.Fatalf("server: %v", err)
	}
	fmt.Fprintf(os.Stderr, "server: listening on %s\n", ln.Addr())
	log.Fatal(http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		// net/http's HTTP/1 server is not full duplex by default, so read the body first.
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if len(body) == 0 {
			body = greeting
		}
		w.Write(body)
	})))
}
