package afterburn

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
)

// Error writes the §8.1 response the library writes for its own errors, with the request
// id, drops what the handler set before, and logs err, which the response never carries.
func TestError(t *testing.T) {
	for _, tt := range []struct {
		code       int
		head, body string
	}{
		{400, "HTTP/1.1 400 Bad Request\r\nAfterburn-Error: bad_request\r\nContent-Type: application/json\r\n",
			`{"type":"bad_request","message":"the request is malformed","request_id":"r1"}`},
		{500, "HTTP/1.1 500 Internal Server Error\r\nAfterburn-Error: handler_error\r\nContent-Type: application/json\r\n",
			`{"type":"handler_error","message":"the function failed while handling the request","request_id":"r1"}`},
	} {
		want := tt.head + "Content-Length: " + strconv.Itoa(len(tt.body)) + "\r\n\r\n" + tt.body
		h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("X-Half-Made", "1")
			Error(w, r, tt.code, errors.New("secret detail"))
		})
		out, logs, err := serveString(t, h, "GET /x HTTP/1.1\r\nHost: fn\r\nAfterBurn-Request-Id: r1\r\n\r\n")
		if err != nil || out != want {
			t.Errorf("Error(%d): got %q, %v; want %q", tt.code, out, err, want)
		}
		if want := "[r1] afterburn: GET /x: " + map[int]string{400: "bad_request", 500: "handler_error"}[tt.code] + ": secret detail\n"; logs != want {
			t.Errorf("Error(%d) logged %q; want %q", tt.code, logs, want)
		}
	}
}

// Outside Serve (a plain net/http server, a test) the body has no request_id.
func TestErrorOutsideServe(t *testing.T) {
	rec := httptest.NewRecorder()
	Error(rec, httptest.NewRequest("GET", "/", nil), 500, nil)
	if rec.Code != 500 || rec.Body.String() != `{"type":"handler_error","message":"the function failed while handling the request"}` ||
		rec.Header().Get("AfterBurn-Error") != "handler_error" {
		t.Errorf("got %d %v %q", rec.Code, rec.Header(), rec.Body.String())
	}
}

func TestErrorOtherCodePanics(t *testing.T) {
	defer func() {
		if v, _ := recover().(string); !strings.Contains(v, "status 404") {
			t.Errorf("recover() = %q; want a panic naming status 404", v)
		}
	}()
	Error(httptest.NewRecorder(), httptest.NewRequest("GET", "/", nil), 404, nil)
}
