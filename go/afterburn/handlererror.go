package afterburn

import (
	"encoding/json"
	"net/http"
	"strconv"
)

// Error answers r with the error response of PROTOCOL.md §8.1 for one of the two errors
// a handler raises itself (§8.2): code 400, type bad_request, for a request that is not
// the input the handler takes (a CloudEvent without an id, §13), and code 500, type
// handler_error, for a handler that failed (a result that makes no response, §8.3, §13).
// The response has Content-Type application/json, the AfterBurn-Error field naming the
// type and the body {"type", "message", "request_id"}, as the library's own errors do.
//
// err is logged with Logf, tagged with the request id; it never reaches the response,
// since it may hold what the client must not see (§8.1). The worker serves on. Error is
// what the adapters of other platforms' handler shapes answer with; it panics for any
// other code, and must be called before anything of the response was written.
func Error(w http.ResponseWriter, r *http.Request, code int, err error) {
	var typ string
	switch code {
	case http.StatusBadRequest:
		typ = typeBadRequest
	case http.StatusInternalServerError:
		typ = typeHandlerError
	default:
		panic("afterburn: Error with status " + strconv.Itoa(code) + ": want 400 (bad_request) or 500 (handler_error)")
	}
	if err != nil {
		Logf(r, "afterburn: %s %s: %s: %v", r.Method, r.RequestURI, typ, err)
	}
	body, _ := json.Marshal(errorBody{Type: typ, Message: messages[typ], RequestID: RequestID(r)})
	h := w.Header()
	for k := range h { // what the handler set for a response it did not send
		delete(h, k)
	}
	h.Set("Content-Type", "application/json")
	h.Set("AfterBurn-Error", typ)
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(code)
	w.Write(body)
}
