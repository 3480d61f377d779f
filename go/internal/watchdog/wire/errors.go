package wire

import (
	"encoding/json"
	"net/http"
	"strconv"
)

// ErrorType is one code of the closed list of PROTOCOL.md §8.2.
type ErrorType string

// PROTOCOL.md §8.2: the closed list. The watchdog raises every type but
// handler_error and version_mismatch, which only libraries produce.
const (
	ErrBadRequest      ErrorType = "bad_request"
	ErrHeadersTooLarge ErrorType = "headers_too_large"
	ErrBodyTooLarge    ErrorType = "body_too_large"
	ErrNotImplemented  ErrorType = "not_implemented"
	ErrOverloaded      ErrorType = "overloaded"
	ErrUnavailable     ErrorType = "unavailable"
	ErrWorkerCrashed   ErrorType = "worker_crashed"
	ErrBadResponse     ErrorType = "bad_response"
	ErrTimeout         ErrorType = "timeout"
	ErrRequestTimeout  ErrorType = "request_timeout"
)

// Status is the HTTP status PROTOCOL.md §8.2 assigns to the type.
func (t ErrorType) Status() int {
	switch t {
	case ErrBadRequest:
		return http.StatusBadRequest
	case ErrHeadersTooLarge:
		return http.StatusRequestHeaderFieldsTooLarge
	case ErrBodyTooLarge:
		return http.StatusRequestEntityTooLarge
	case ErrNotImplemented:
		return http.StatusNotImplemented
	case ErrOverloaded:
		return http.StatusTooManyRequests
	case ErrUnavailable:
		return http.StatusServiceUnavailable
	case ErrWorkerCrashed, ErrBadResponse:
		return http.StatusBadGateway
	case ErrTimeout:
		return http.StatusGatewayTimeout
	case ErrRequestTimeout:
		return http.StatusRequestTimeout
	}
	return http.StatusInternalServerError
}

// message is the human-readable sentence of PROTOCOL.md §8.1. It never
// carries worker output, which may hold secrets.
func (t ErrorType) message() string {
	switch t {
	case ErrBadRequest:
		return "the request is malformed"
	case ErrHeadersTooLarge:
		return "the request head is larger than the header limit"
	case ErrBodyTooLarge:
		return "the request body is larger than the body limit"
	case ErrNotImplemented:
		return "the request uses a transfer coding other than chunked"
	case ErrOverloaded:
		return "too many requests are in flight"
	case ErrUnavailable:
		return "no function process is available: the service is shutting down or cannot start one"
	case ErrWorkerCrashed:
		return "the function process exited while handling the request"
	case ErrBadResponse:
		return "the function process sent a malformed response"
	case ErrTimeout:
		return "the request did not complete before its deadline"
	case ErrRequestTimeout:
		return "the client did not send the request head in time"
	}
	return string(t)
}

// ErrorBody is the JSON body of PROTOCOL.md §8.1.
type ErrorBody struct {
	Type      ErrorType `json:"type"`
	Message   string    `json:"message"`
	RequestID string    `json:"request_id,omitempty"`
}

// WriteError answers the client with the error response of PROTOCOL.md §8.1:
// the JSON body, Content-Type: application/json and AfterBurn-Error. It
// returns the status and the body's size.
func WriteError(w http.ResponseWriter, t ErrorType, requestID string) (int, int) {
	body, _ := json.Marshal(ErrorBody{Type: t, Message: t.message(), RequestID: requestID})
	body = append(body, '\n')
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("AfterBurn-Error", string(t))
	h.Set("Content-Length", strconv.Itoa(len(body)))
	if requestID != "" {
		h.Set("AfterBurn-Request-Id", requestID)
	}
	status := t.Status()
	w.WriteHeader(status)
	w.Write(body)
	return status, len(body)
}
