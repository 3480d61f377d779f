package watchdog

import (
	"encoding/json"
	"net/http"
	"strconv"
)

// errorType is one code of the closed list of PROTOCOL.md §8.2.
type errorType string

// PROTOCOL.md §8.2: the closed list. The watchdog raises every type but
// handler_error and version_mismatch, which only libraries produce.
const (
	errBadRequest      errorType = "bad_request"
	errHeadersTooLarge errorType = "headers_too_large"
	errBodyTooLarge    errorType = "body_too_large"
	errNotImplemented  errorType = "not_implemented"
	errOverloaded      errorType = "overloaded"
	errUnavailable     errorType = "unavailable"
	errWorkerCrashed   errorType = "worker_crashed"
	errBadResponse     errorType = "bad_response"
	errTimeout         errorType = "timeout"
	errRequestTimeout  errorType = "request_timeout"
)

// status is the HTTP status PROTOCOL.md §8.2 assigns to the type.
func (t errorType) status() int {
	switch t {
	case errBadRequest:
		return http.StatusBadRequest
	case errHeadersTooLarge:
		return http.StatusRequestHeaderFieldsTooLarge
	case errBodyTooLarge:
		return http.StatusRequestEntityTooLarge
	case errNotImplemented:
		return http.StatusNotImplemented
	case errOverloaded:
		return http.StatusTooManyRequests
	case errUnavailable:
		return http.StatusServiceUnavailable
	case errWorkerCrashed, errBadResponse:
		return http.StatusBadGateway
	case errTimeout:
		return http.StatusGatewayTimeout
	case errRequestTimeout:
		return http.StatusRequestTimeout
	}
	return http.StatusInternalServerError
}

// message is the human-readable sentence of PROTOCOL.md §8.1. It never
// carries worker output, which may hold secrets.
func (t errorType) message() string {
	switch t {
	case errBadRequest:
		return "the request is malformed"
	case errHeadersTooLarge:
		return "the request head is larger than the header limit"
	case errBodyTooLarge:
		return "the request body is larger than the body limit"
	case errNotImplemented:
		return "the request uses a transfer coding other than chunked"
	case errOverloaded:
		return "too many requests are in flight"
	case errUnavailable:
		return "no function process is available: the service is shutting down or cannot start one"
	case errWorkerCrashed:
		return "the function process exited while handling the request"
	case errBadResponse:
		return "the function process sent a malformed response"
	case errTimeout:
		return "the request did not complete before its deadline"
	case errRequestTimeout:
		return "the client did not send the request head in time"
	}
	return string(t)
}

// errorBody is the JSON body of PROTOCOL.md §8.1.
type errorBody struct {
	Type      errorType `json:"type"`
	Message   string    `json:"message"`
	RequestID string    `json:"request_id,omitempty"`
}

// writeError answers the client with the error response of PROTOCOL.md §8.1:
// the JSON body, Content-Type: application/json and AfterBurn-Error. It
// returns the status and the body's size.
func writeError(w http.ResponseWriter, t errorType, requestID string) (int, int) {
	body, _ := json.Marshal(errorBody{Type: t, Message: t.message(), RequestID: requestID})
	body = append(body, '\n')
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("AfterBurn-Error", string(t))
	h.Set("Content-Length", strconv.Itoa(len(body)))
	if requestID != "" {
		h.Set("AfterBurn-Request-Id", requestID)
	}
	status := t.status()
	w.WriteHeader(status)
	w.Write(body)
	return status, len(body)
}
