// Command handler is the entry program of the golang-http-afterburn template: it serves a
// function written for the OpenFaaS golang-http template, Handle(handler.Request)
// (handler.Response, error), unchanged, through the AfterBurn library and its openfaas
// adapter. The watchdog runs it once per worker (fprocess=./handler).
package main

import (
	"log"

	"github.com/afterburn-dev/afterburn/go/afterburn"
	"github.com/afterburn-dev/afterburn/go/afterburn/openfaas"

	"handler/function"
)

func main() {
	// Serve returns nil when the watchdog shuts the worker down, so the process exits 0.
	if err := afterburn.Serve(openfaas.Handler(function.Handle)); err != nil {
		log.Fatal(err)
	}
}
