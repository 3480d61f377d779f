package afterburn

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"math"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

const get = "GET /x HTTP/1.1\r\nHost: fn\r\n\r\n"

// serveString runs the serve loop over the given request bytes and returns every byte
// it wrote, its log, and what serve returned.
func serveString(t *testing.T, h http.Handler, in string) (out, logs string, err error) {
	t.Helper()
	var o, l bytes.Buffer
	c := newConn(strings.NewReader(in), &o, defaultLimits)
	c.log = &l
	err = c.serve(h)
	return o.String(), l.String(), err
}

func TestResponseFraming(t *testing.T) {
	big := strings.Repeat("b", bufferBeforeFraming+1)
	tests := []struct {
		name    string
		method  string
		handler http.HandlerFunc
		want    string
	}{{
		name:    "nothing written: 200 and Content-Length 0",
		handler: func(w http.ResponseWriter, r *http.Request) {},
		want:    "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n",
	}, {
		name: "small body: Content-Length, Content-Type sniffed as net/http does",
		handler: func(w http.ResponseWriter, r *http.Request) {
			io.WriteString(w, "hel")
			w.Write([]byte("lo"))
		},
		want: "HTTP/1.1 200 OK\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: 5\r\n\r\nhello",
	}, {
		name: "status and fields sorted, each value on its own line",
		handler: func(w http.ResponseWriter, r *http.Request) {
			w.Header().Add("Set-Cookie", "a=1")
			w.Header().Add("Set-Cookie", "b=2")
			w.Header().Set("Content-Type", "text/x")
			w.Header().Set("X-Evil", "a\r\nInjected: 1")
			w.Header()["Bad Name"] = []string{"dropped"}
			w.WriteHeader(418)
		},
		want: "HTTP/1.1 418 I'm a teapot\r\nContent-Type: text/x\r\nSet-Cookie: a=1\r\nSet-Cookie: b=2\r\nX-Evil: a  Injected: 1\r\nContent-Length: 0\r\n\r\n",
	}, {
		name: "unknown status has an empty reason phrase",
		handler: func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(299)
		},
		want: "HTTP/1.1 299 \r\nContent-Length: 0\r\n\r\n",
	}, {
		name: "Flush makes the body chunked, one chunk per flush",
		handler: func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, "data: 1\n\n")
			w.(http.Flusher).Flush()
			io.WriteString(w, "data: 2\n\n")
			http.NewResponseController(w).Flush()
		},
		want: "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n" +
			"9\r\ndata: 1\n\n\r\n9\r\ndata: 2\n\n\r\n0\r\n\r\n",
	}, {
		name: "a body larger than the buffer is chunked",
		handler: func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/plain")
			io.WriteString(w, big)
		},
		want: "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\n\r\n" +
			"4001\r\n" + big + "\r\n0\r\n\r\n",
	}, {
		name: "the handler's Content-Length is used",
		handler: func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/plain")
			w.Header().Set("Content-Length", "16385")
			io.WriteString(w, big[:100])
			w.(http.Flusher).Flush()
			io.WriteString(w, big[100:])
		},
		want: "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 16385\r\n\r\n" + big,
	}, {
		name: "204: no Content-Length, no body",
		handler: func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Length", "5")
			w.WriteHeader(204)
			if _, err := io.WriteString(w, "x"); err != http.ErrBodyNotAllowed {
				panic(err)
			}
		},
		want: "HTTP/1.1 204 No Content\r\n\r\n",
	}, {
		name: "304: no body",
		handler: func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(304)
		},
		want: "HTTP/1.1 304 Not Modified\r\n\r\n",
	}, {
		name:   "HEAD: the length the body would have had, no body",
		method: "HEAD",
		handler: func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/plain")
			io.WriteString(w, "hello")
		},
		want: "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 5\r\n\r\n",
	}, {
		name:   "HEAD flushed: neither Content-Length nor chunked",
		method: "HEAD",
		handler: func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/plain")
			w.(http.Flusher).Flush()
			io.WriteString(w, "hello")
		},
		want: "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\n",
	}, {
		name: "1xx is never sent",
		handler: func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(103)
			w.WriteHeader(201)
		},
		want: "HTTP/1.1 201 Created\r\nContent-Length: 0\r\n\r\n",
	}, {
		name: "changes after WriteHeader do not reach the head",
		handler: func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("X-A", "1")
			w.WriteHeader(200)
			w.Header().Set("X-A", "2")
			w.Header().Set("X-B", "3")
		},
		want: "HTTP/1.1 200 OK\r\nX-A: 1\r\nContent-Length: 0\r\n\r\n",
	}, {
		name: "declared trailers force chunked and follow the last chunk",
		handler: func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Trailer", "X-Sum")
			w.Header().Set("Content-Type", "text/plain")
			io.WriteString(w, "abc")
			w.Header().Set("X-Sum", "6")
		},
		want: "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nTrailer: X-Sum\r\nTransfer-Encoding: chunked\r\n\r\n" +
			"3\r\nabc\r\n0\r\nX-Sum: 6\r\n\r\n",
	}, {
		name: "a trailer set through a map kept from before WriteHeader stays out of the head",
		handler: func(w http.ResponseWriter, r *http.Request) {
			h := w.Header()
			h.Set("Trailer", "X-Sum")
			h.Set("Content-Type", "text/plain")
			io.WriteString(w, "abc")
			h.Set("X-Sum", "6")
		},
		want: "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nTrailer: X-Sum\r\nTransfer-Encoding: chunked\r\n\r\n" +
			"3\r\nabc\r\n0\r\nX-Sum: 6\r\n\r\n",
	}, {
		name: "TrailerPrefix trailers",
		handler: func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/plain")
			io.WriteString(w, "abc")
			w.Header().Set(http.TrailerPrefix+"X-Late", "yes")
		},
		want: "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\n\r\n" +
			"3\r\nabc\r\n0\r\nX-Late: yes\r\n\r\n",
	}, {
		name: "the handler's Transfer-Encoding is the library's to decide",
		handler: func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Transfer-Encoding", "gzip")
			w.Header().Set("Content-Type", "text/plain")
			io.WriteString(w, "abc")
		},
		want: "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 3\r\n\r\nabc",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			method := tt.method
			if method == "" {
				method = "GET"
			}
			out, logs, err := serveString(t, tt.handler, method+" /x HTTP/1.1\r\nHost: fn\r\n\r\n")
			if err != nil {
				t.Fatalf("serve: %v; log %q", err, logs)
			}
			if out != tt.want {
				t.Errorf("got\n%q\nwant\n%q", out, tt.want)
			}
		})
	}
}

func TestContentLengthEnforced(t *testing.T) {
	var werr error
	out, _, err := serveString(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "3")
		_, werr = io.WriteString(w, "abcd")
		io.WriteString(w, "ab")
	}), get+get)
	if werr != http.ErrContentLength {
		t.Errorf("writing past Content-Length: got %v; want http.ErrContentLength", werr)
	}
	// PROTOCOL.md §8.3: a short body must not look complete; the worker stops.
	if err == nil || !strings.Contains(err.Error(), "declared Content-Length") {
		t.Errorf("serve: got %v; want the short-body error", err)
	}
	if want := "HTTP/1.1 200 OK\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: 3\r\n\r\nab"; out != want {
		t.Errorf("got %q; want %q and nothing for the second request", out, want)
	}
}

func TestWriteAfterReturn(t *testing.T) {
	var saved http.ResponseWriter
	out, _, err := serveString(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if saved != nil {
			if _, err := io.WriteString(saved, "stale"); err != errAfterHandler {
				t.Errorf("write after return: got %v; want errAfterHandler", err)
			}
			saved.(http.Flusher).Flush()
		}
		saved = w
	}), get+get)
	if err != nil || strings.Contains(out, "stale") {
		t.Errorf("got %q, %v", out, err)
	}
}

func TestResponseController(t *testing.T) {
	out, _, err := serveString(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc := http.NewResponseController(w)
		if err := rc.EnableFullDuplex(); err != nil {
			t.Errorf("EnableFullDuplex: %v", err)
		}
		io.WriteString(w, "a")
		if err := rc.Flush(); err != nil {
			t.Errorf("Flush: %v", err)
		}
	}), get)
	if err != nil || !strings.Contains(out, "Transfer-Encoding: chunked\r\n\r\n1\r\na\r\n0\r\n\r\n") {
		t.Errorf("got %q, %v", out, err)
	}
}

// handshakeReply is the answer to a handshake without a token: the first one (§4.6).
var handshakeReply = "HTTP/1.1 200 OK\r\n" + handshakeFields(defaultMaxLanes, 0)

const handshake = "OPTIONS * HTTP/1.1\r\nHost: afterburn\r\nAfterBurn-Handshake: 1\r\nContent-Length: 0\r\n\r\n"

func TestHandshake(t *testing.T) {
	called := 0
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { called++ })
	tests := []struct {
		name, in string
		calls    int
	}{
		{"exact handshake", handshake, 0},
		{"offered list", strings.Replace(handshake, ": 1\r", ": 7, 1 ,2\r", 1), 0},
		{"by field, not position", get + "GET /y HTTP/1.1\r\nHost: a\r\nafterburn-handshake: 1\r\n\r\n" + get, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			called = 0
			out, _, err := serveString(t, h, tt.in)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(out, handshakeReply) {
				t.Errorf("got %q; want the reply %q", out, handshakeReply)
			}
			if called != tt.calls {
				t.Errorf("handler called %d times; want %d", called, tt.calls)
			}
		})
	}
	t.Run("version mismatch", func(t *testing.T) {
		out, _, err := serveString(t, h, strings.Replace(handshake, ": 1\r", ": 2, 99\r", 1)+get)
		var perr *protocolError
		if !errors.As(err, &perr) || perr.typ != typeVersionMismatch {
			t.Fatalf("serve: got %v; want a version mismatch", err)
		}
		resp := readResponse(t, out)
		if resp.StatusCode != 400 || resp.Header.Get("AfterBurn-Protocol") != "1" || resp.json["type"] != "version_mismatch" {
			t.Errorf("got %d %v %v", resp.StatusCode, resp.Header, resp.json)
		}
	})
}

type testResponse struct {
	*http.Response
	body []byte
	json map[string]any
}

func readResponses(t *testing.T, out string) []testResponse {
	t.Helper()
	br := bufio.NewReader(strings.NewReader(out))
	var rs []testResponse
	for {
		if _, err := br.Peek(1); err == io.EOF {
			return rs
		}
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("reading response %d: %v in %q", len(rs), err, out)
		}
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatalf("reading response %d: %v in %q", len(rs), err, out)
		}
		tr := testResponse{Response: resp, body: body}
		json.Unmarshal(body, &tr.json)
		rs = append(rs, tr)
	}
}

func readResponse(t *testing.T, out string) testResponse {
	t.Helper()
	rs := readResponses(t, out)
	if len(rs) != 1 {
		t.Fatalf("got %d responses in %q; want 1", len(rs), out)
	}
	return rs[0]
}

func TestPanicBeforeResponse(t *testing.T) {
	for _, v := range []any{"secret token 123", http.ErrAbortHandler} {
		n := 0
		h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			n++
			if n == 1 {
				w.Header().Set("X-Lost", "1")
				io.WriteString(w, "lost")
				panic(v)
			}
			io.WriteString(w, "ok")
		})
		out, logs, err := serveString(t, h,
			"POST /x HTTP/1.1\r\nHost: fn\r\nAfterBurn-Request-Id: rid-7\r\nContent-Length: 3\r\n\r\nabc"+get)
		if err != nil {
			t.Fatalf("serve: %v; want it to keep serving", err)
		}
		rs := readResponses(t, out)
		if len(rs) != 2 {
			t.Fatalf("got %d responses; want 2", len(rs))
		}
		r := rs[0]
		if r.StatusCode != 500 || r.Header.Get("AfterBurn-Error") != "handler_error" ||
			r.Header.Get("Content-Type") != "application/json" || r.Header.Get("X-Lost") != "" ||
			r.json["type"] != "handler_error" || r.json["request_id"] != "rid-7" || r.json["message"] == "" {
			t.Errorf("got %d %v %s", r.StatusCode, r.Header, r.body)
		}
		if bytes.Contains(r.body, []byte("secret")) {
			t.Errorf("the panic value reached the response: %s", r.body)
		}
		if string(rs[1].body) != "ok" {
			t.Errorf("second response %q; want ok", rs[1].body)
		}
		if !strings.HasPrefix(logs, "[rid-7] afterburn: ") {
			t.Errorf("log %q; want it prefixed with the request id", logs)
		}
		if v != http.ErrAbortHandler && !strings.Contains(logs, "secret token 123") && !strings.Contains(logs, "goroutine ") {
			t.Errorf("log %q; want the panic value and the stack", logs)
		}
	}
}

func TestPanicAfterResponseStarted(t *testing.T) {
	out, _, err := serveString(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "partial")
		w.(http.Flusher).Flush()
		io.WriteString(w, "never sent")
		panic("boom")
	}), get+get)
	if err == nil {
		t.Fatal("serve returned nil; want an error so the worker exits")
	}
	// PROTOCOL.md §8.3: no last chunk, nothing more.
	want := "HTTP/1.1 200 OK\r\nContent-Type: text/plain; charset=utf-8\r\nTransfer-Encoding: chunked\r\n\r\n7\r\npartial\r\n"
	if out != want {
		t.Errorf("got %q; want %q", out, want)
	}
}

func TestMetadata(t *testing.T) {
	var (
		id, id2   string
		remaining time.Duration
		deadline  bool
		hdr       http.Header
		ctx       context.Context
		derived   context.Context
	)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if id == "" {
			id = RequestID(r)
			_, deadline = r.Context().Deadline()
			remaining = TimeRemaining(r)
			hdr = r.Header
			ctx = r.Context()
			var cancel context.CancelFunc
			derived, cancel = context.WithTimeout(r.Context(), time.Hour)
			t.Cleanup(cancel)
			return
		}
		id2 = RequestID(r.WithContext(context.WithValue(r.Context(), "k", 1)))
		if TimeRemaining(r) != math.MaxInt64 {
			t.Errorf("TimeRemaining without a deadline: got %v", TimeRemaining(r))
		}
	})
	_, _, err := serveString(t, h,
		"GET /x HTTP/1.1\r\nHost: fn\r\nAfterBurn-Timeout-Ms: 60000\r\nX-A: 1\r\n\r\n"+
			"GET /x HTTP/1.1\r\nHost: fn\r\nAFTERBURN-REQUEST-ID: abc\r\n\r\n")
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`^[0-9a-f]{32}$`).MatchString(id) {
		t.Errorf("generated request id %q; want 32 lower-case hex digits", id)
	}
	if id2 != "abc" {
		t.Errorf("request id from a derived context: got %q; want abc", id2)
	}
	if !deadline || remaining <= 59*time.Second || remaining > 60*time.Second {
		t.Errorf("deadline %v, remaining %v; want about 60s", deadline, remaining)
	}
	if len(hdr) != 1 || hdr.Get("X-A") != "1" {
		t.Errorf("r.Header = %v; want only X-A (§5.3)", hdr)
	}
	if ctx.Err() != context.Canceled {
		t.Errorf("context after the handler returned: %v; want canceled", ctx.Err())
	}
	<-derived.Done() // a context derived in the handler is cancelled with it
}

func TestDeadlineZero(t *testing.T) {
	_, _, err := serveString(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if d := TimeRemaining(r); d != 0 {
			t.Errorf("TimeRemaining = %v; want 0", d)
		}
		<-r.Context().Done() // already passed: no wait
		if r.Context().Err() != context.DeadlineExceeded {
			t.Errorf("ctx.Err() = %v", r.Context().Err())
		}
	}), "GET /x HTTP/1.1\r\nHost: fn\r\nAfterBurn-Timeout-Ms: 0\r\n\r\n")
	if err != nil {
		t.Fatal(err)
	}
}

func TestRequestFields(t *testing.T) {
	var r0 *http.Request
	var body []byte
	_, _, err := serveString(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r0 = r
		body, _ = io.ReadAll(r.Body)
	}), "POST /a%20b/c?q=%41 HTTP/1.1\r\nHost: fn.example\r\nTrailer: X-Sum\r\nTransfer-Encoding: chunked\r\n\r\n"+
		"3\r\nabc\r\n0\r\nX-Sum: 6\r\nX-Other: 7\r\n\r\n")
	if err != nil {
		t.Fatal(err)
	}
	r := r0
	checks := []struct {
		name      string
		got, want any
	}{
		{"Method", r.Method, "POST"},
		{"RequestURI", r.RequestURI, "/a%20b/c?q=%41"},
		{"URL.Path", r.URL.Path, "/a b/c"},
		{"URL.EscapedPath", r.URL.EscapedPath(), "/a%20b/c"},
		{"URL.Query", r.URL.Query().Get("q"), "A"},
		{"Host", r.Host, "fn.example"},
		{"Proto", r.Proto, "HTTP/1.1"},
		{"ContentLength", r.ContentLength, int64(-1)},
		{"TransferEncoding", strings.Join(r.TransferEncoding, ","), "chunked"},
		{"Header", len(r.Header), 0},
		{"body", string(body), "abc"},
		{"Trailer X-Sum", r.Trailer.Get("X-Sum"), "6"},
		{"Trailer X-Other", r.Trailer.Get("X-Other"), "7"},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %#v; want %#v", c.name, c.got, c.want)
		}
	}
}

func TestUnreadBody(t *testing.T) {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, r.URL.Path)
	})
	t.Run("drained", func(t *testing.T) {
		big := strings.Repeat("z", maxPreDrain*2)
		var body io.Reader
		h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if body == nil {
				body = r.Body
			}
			io.WriteString(w, r.URL.Path)
		})
		out, _, err := serveString(t, h, "POST /a HTTP/1.1\r\nHost: fn\r\nContent-Length: "+
			strconv.Itoa(len(big))+"\r\n\r\n"+big+"GET /b HTTP/1.1\r\nHost: fn\r\n\r\n")
		if err != nil {
			t.Fatal(err)
		}
		if rs := readResponses(t, out); len(rs) != 2 || string(rs[1].body) != "/b" {
			t.Errorf("got %q", out)
		}
		if _, err := body.Read(make([]byte, 1)); err != http.ErrBodyReadAfterClose {
			t.Errorf("reading the body after the handler returned: %v; want ErrBodyReadAfterClose", err)
		}
	})
	t.Run("framing error in an unread body is answered as one", func(t *testing.T) {
		out, _, err := serveString(t, h, "POST /a HTTP/1.1\r\nHost: fn\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabcX")
		if err == nil {
			t.Fatal("serve returned nil")
		}
		if r := readResponse(t, out); r.StatusCode != 400 || r.json["type"] != "bad_request" {
			t.Errorf("got %d %s", r.StatusCode, r.body)
		}
	})
	t.Run("framing error after the response was sent ends it incomplete", func(t *testing.T) {
		out, _, err := serveString(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			io.WriteString(w, "x")
			w.(http.Flusher).Flush()
			io.ReadAll(r.Body)
		}), "POST /a HTTP/1.1\r\nHost: fn\r\nContent-Length: 10\r\n\r\nabc")
		if err == nil {
			t.Fatal("serve returned nil")
		}
		if !strings.HasSuffix(out, "1\r\nx\r\n") {
			t.Errorf("got %q; want the chunked body left without its last chunk", out)
		}
	})
}

func TestEnvironment(t *testing.T) {
	env := func(m map[string]string) func(string) (string, bool) {
		return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
	}
	lim, err := limitsFromEnv(env(nil))
	if err != nil || lim != (limits{maxHead: 65536}) {
		t.Errorf("defaults: got %+v, %v", lim, err)
	}
	lim, err = limitsFromEnv(env(map[string]string{"AFTERBURN_MAX_HEADER_BYTES": "32768", "AFTERBURN_MAX_BODY_BYTES": "0"}))
	if err != nil || lim != (limits{maxHead: 32768 + 1024}) {
		t.Errorf("§7.3: got %+v, %v", lim, err)
	}
	for _, bad := range []map[string]string{
		{"AFTERBURN_MAX_HEADER_BYTES": "32k"},
		{"AFTERBURN_MAX_BODY_BYTES": "-1"},
		{"AFTERBURN_MAX_BODY_BYTES": ""},
	} {
		if _, err := limitsFromEnv(env(bad)); err == nil || !strings.HasPrefix(err.Error(), "afterburn: bad AFTERBURN_MAX_") {
			t.Errorf("%v: got %v; want an error", bad, err)
		}
	}
	for _, v := range []string{"3;4", "", "3", "3,4,5", " 3,4", "3,+4", "-3,4", "a,b", "3,99999999999"} {
		if _, _, err := parseFDs(v); err == nil || !strings.Contains(err.Error(), "bad AFTERBURN_FDS in environment: ") {
			t.Errorf("parseFDs(%q): got %v; want an error", v, err)
		}
	}
	if in, out, err := parseFDs("3,4"); in != 3 || out != 4 || err != nil {
		t.Errorf("parseFDs(3,4) = %d, %d, %v", in, out, err)
	}
}

// tokenEqualFold (classify's comparison) agrees with asciiEqualFold on every token:
// each interpreted name, with each token byte in each position.
func TestTokenEqualFold(t *testing.T) {
	for _, name := range []string{"host", "trailer", "content-length", "transfer-encoding",
		"afterburn-exchange", "afterburn-handshake", "afterburn-request-id", "afterburn-timeout-ms"} {
		for i := range len(name) {
			for c := 0; c < 256; c++ {
				if !tchar[c] {
					continue
				}
				b := []byte(name)
				b[i] = byte(c)
				if got, want := tokenEqualFold(b, name), asciiEqualFold(b, name); got != want {
					t.Errorf("tokenEqualFold(%q, %q) = %v; want %v", b, name, got, want)
				}
			}
		}
		if !tokenEqualFold([]byte(strings.ToUpper(name)), name) || tokenEqualFold([]byte(name+"x"), name) {
			t.Errorf("%q: upper case or a longer name misjudged", name)
		}
	}
}
