// Package openfaas serves a function written for the OpenFaaS golang-http template
// (github.com/openfaas/golang-http-template), whose handler is
//
//	func Handle(req handler.Request) (handler.Response, error)
//
// on the types of github.com/openfaas/templates-sdk/go-http, under AfterBurn, unchanged:
//
//	afterburn.Serve(openfaas.Handler(function.Handle))
//
// The template golang-http-afterburn does exactly that. The shape is openfaas-http of
// PROTOCOL.md §13, held to conformance/shapes/openfaas-http.json. The request carries
// the body, every header, the raw query, the method and the host, as golang-http's own
// entry point gives them, and the context of the AfterBurn request (its deadline,
// afterburn.RequestID). The response is the result's headers, its status (0 is 200, as
// in golang-http) and its body.
//
// Where golang-http answers a returned error with a 500 and the result's body, this
// package answers with the error response of PROTOCOL.md §8.1 (type handler_error),
// and logs the error with the request id; so does a status outside 100–599, which no
// HTTP response can carry. The worker serves on.
package openfaas

import (
	"fmt"
	"io"
	"net/http"

	"github.com/afterburn-dev/afterburn/go/afterburn"
	handler "github.com/openfaas/templates-sdk/go-http"
)

// Handler returns an http.Handler that calls fn, a golang-http Handle, for every request.
func Handler(fn func(handler.Request) (handler.Response, error)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			// The library has answered a body it could not read (§8.8) or the
			// watchdog cancelled the request; there is nothing left to say.
			afterburn.Logf(r, "openfaas: reading the request body: %v", err)
			return
		}
		req := handler.Request{
			Body:        body,
			Header:      r.Header,
			QueryString: r.URL.RawQuery,
			Method:      r.Method,
			Host:        r.Host,
		}
		req.WithContext(r.Context())
		res, err := fn(req)
		if err != nil {
			afterburn.Error(w, r, http.StatusInternalServerError, fmt.Errorf("Handle returned an error: %w", err))
			return
		}
		status := res.StatusCode
		if status == 0 {
			status = http.StatusOK
		}
		if status < 100 || status > 599 {
			afterburn.Error(w, r, http.StatusInternalServerError, fmt.Errorf("Handle returned StatusCode %d, not an HTTP status", res.StatusCode))
			return
		}
		for k, v := range res.Header {
			w.Header()[k] = v
		}
		w.WriteHeader(status)
		w.Write(res.Body)
	})
}
