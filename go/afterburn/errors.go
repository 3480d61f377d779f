package afterburn

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
)

// The error types of PROTOCOL.md §8.2 that a library raises. The list is closed.
const (
	typeBadRequest      = "bad_request"       // 400
	typeHeadersTooLarge = "headers_too_large" // 431
	typeBodyTooLarge    = "body_too_large"    // 413
	typeNotImplemented  = "not_implemented"   // 501
	typeHandlerError    = "handler_error"     // 500
	typeVersionMismatch = "version_mismatch"  // 400, handshake only
)

// messages are the human-readable sentences of the §8.1 error body, one per type.
// PROTOCOL.md §8.1: the message never carries a handler's panic value or any request
// bytes, which may hold secrets; the details go to the Go error and to stderr only.
var messages = map[string]string{
	typeBadRequest:      "the request is malformed",
	typeHeadersTooLarge: "the request head is larger than the limit",
	typeBodyTooLarge:    "the request body is larger than the limit",
	typeNotImplemented:  "the request uses a transfer coding other than chunked",
	typeHandlerError:    "the function failed while handling the request",
	typeVersionMismatch: "the library speaks none of the offered protocol versions",
}

// A protocolError is a request the library cannot parse (PROTOCOL.md §4.3, §8.8), or a
// failed handshake (§3.4). It carries the status and type of §8.2 for the error
// response, and a detail with the offending value for the Go error Serve returns.
type protocolError struct {
	status int
	typ    string
	detail string // what was wrong, with the bad value quoted; never sent on the wire
	cause  error  // io.ErrUnexpectedEOF for a truncated request, else nil

	requestID string // for the error body, when the head got as far as AfterBurn-Request-Id
	token     string // the head's AfterBurn-Exchange, when the whole head was read (§4.6)
}

func (e *protocolError) Error() string {
	return "afterburn: " + messages[e.typ] + ": " + e.detail
}

func (e *protocolError) Unwrap() error { return e.cause }

// PROTOCOL.md §8.2 / conformance README: a rule of §4.3 that names no status is 400.
func badRequest(detail string) *protocolError {
	return &protocolError{status: http.StatusBadRequest, typ: typeBadRequest, detail: detail}
}

func headersTooLarge(limit int) *protocolError {
	return &protocolError{status: http.StatusRequestHeaderFieldsTooLarge, typ: typeHeadersTooLarge,
		detail: "more than " + strconv.Itoa(limit) + " bytes"}
}

func bodyTooLarge(limit int64) *protocolError {
	return &protocolError{status: http.StatusRequestEntityTooLarge, typ: typeBodyTooLarge,
		detail: "more than " + strconv.FormatInt(limit, 10) + " bytes"}
}

func notImplemented(value []byte) *protocolError {
	return &protocolError{status: http.StatusNotImplemented, typ: typeNotImplemented,
		detail: "Transfer-Encoding " + strconv.Quote(string(value))}
}

// truncated reports EOF (or a read error) inside a request. PROTOCOL.md §9.4: EOF
// inside a request is a framing error.
func truncated(where string, err error) *protocolError {
	if err == io.EOF || err == io.ErrUnexpectedEOF {
		return &protocolError{status: http.StatusBadRequest, typ: typeBadRequest,
			detail: "end of the request pipe inside " + where, cause: io.ErrUnexpectedEOF}
	}
	return &protocolError{status: http.StatusBadRequest, typ: typeBadRequest,
		detail: "reading " + where + ": " + err.Error(), cause: err}
}

// errorBody is the JSON body of PROTOCOL.md §8.1.
type errorBody struct {
	Type      string `json:"type"`
	Message   string `json:"message"`
	RequestID string `json:"request_id,omitempty"`
}

// appendErrorResponse appends a complete §8.1 error response: the status of §8.2,
// the exchange token (§4.6), Content-Type: application/json, the AfterBurn-Error field
// naming the type, any extra field lines (already CRLF-terminated) and a
// Content-Length body.
func appendErrorResponse(b []byte, status int, typ, requestID, token, extra string) []byte {
	body, _ := json.Marshal(errorBody{Type: typ, Message: messages[typ], RequestID: requestID})
	b = appendStatusLine(b, status, token)
	b = append(b, "Content-Type: application/json\r\nAfterBurn-Error: "...)
	b = append(b, typ...)
	b = append(b, "\r\n"...)
	b = append(b, extra...)
	b = append(b, "Content-Length: "...)
	b = strconv.AppendInt(b, int64(len(body)), 10)
	b = append(b, "\r\n\r\n"...)
	return append(b, body...)
}

// appendStatusLine starts every response head the library writes: it appends
// "HTTP/1.1 NNN Reason\r\n" and, when the request carried one, the field
// "AfterBurn-Exchange: token\r\n". PROTOCOL.md §4.4: the reason phrase may be empty,
// the single space before it may not. §4.6: the token goes into the head of every
// response to a request that carried it — handler responses, errors, handshake
// replies — so it is written here, where no head can leave it out.
func appendStatusLine(b []byte, code int, token string) []byte {
	b = append(b, "HTTP/1.1 "...)
	b = append(b, byte('0'+code/100), byte('0'+code/10%10), byte('0'+code%10), ' ')
	b = append(b, http.StatusText(code)...)
	b = append(b, "\r\n"...)
	if token != "" {
		b = append(b, "AfterBurn-Exchange: "...)
		b = append(b, token...)
		b = append(b, "\r\n"...)
	}
	return b
}

// errAfterHandler is returned by the ResponseWriter once the handler has returned.
var errAfterHandler = errors.New("afterburn: ResponseWriter used after the handler returned")
