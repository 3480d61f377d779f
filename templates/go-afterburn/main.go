// Command handler is the entry program of the go-afterburn template: it serves the
// function's Handle through the AfterBurn library. The watchdog runs it once per worker
// (fprocess=./handler) and hands it request after request over pipes.
package main

import (
	"log"
	"net/http"

	"github.com/afterburn-dev/afterburn/go/afterburn"

	"handler/function"
)

func main() {
	// Serve returns nil when the watchdog shuts the worker down, so the process exits 0.
	if err := afterburn.Serve(http.HandlerFunc(function.Handle)); err != nil {
		log.Fatal(err)
	}
}
