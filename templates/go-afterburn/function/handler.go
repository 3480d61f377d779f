// Package function is your function: an ordinary net/http handler. The worker process
// starts once and calls Handle for every request, one at a time.
package function

import (
	"fmt"
	"io"
	"net/http"

	"github.com/afterburn-dev/afterburn/go/afterburn"
)

// Start-up work goes in package variables or init(): it runs once per worker, before the
// worker is reported ready (load a model, open a connection pool, build a table).
var greeting = "Hello"

// Handle greets GET requests by name (?name=) and echoes POST bodies.
func Handle(w http.ResponseWriter, r *http.Request) {
	// Printing is safe: stdout goes to the watchdog's log, never into a response.
	fmt.Printf("%s %s (request %s)\n", r.Method, r.URL.Path, afterburn.RequestID(r))
	if r.Method == http.MethodPost {
		// Echo the body back with its content type, streamed as it arrives.
		contentType := r.Header.Get("Content-Type")
		if contentType == "" {
			contentType = "application/octet-stream"
		}
		w.Header().Set("Content-Type", contentType)
		io.Copy(w, r.Body)
		return
	}
	name := r.URL.Query().Get("name")
	if name == "" {
		name = "world"
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	fmt.Fprintf(w, "%s, %s!\n", greeting, name)
}
