// Command io is the Go function of the lanes scenario (bench/README.md, "Lanes"): GET /io
// waits 50 ms, as a handler waiting on a database or another service does, and answers
// 1 KiB. It waits with time.Sleep in the handler's goroutine, which holds no thread of the
// runtime's while it sleeps, so one worker's lanes wait together. Any other request gets
// the greeting of every benchmark function.
package main

import (
	"log"
	"net/http"
	"strings"
	"time"

	"github.com/afterburn-dev/afterburn/go/afterburn"
)

var (
	greeting = []byte("Hello, world!\n")
	kib      = []byte(strings.Repeat("abcdefghijklmnop", 64))
)

func main() {
	log.Fatal(afterburn.Serve(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		if r.URL.Path != "/io" {
			w.Write(greeting)
			return
		}
		time.Sleep(50 * time.Millisecond)
		w.Write(kib)
	})))
}
