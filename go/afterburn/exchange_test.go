package afterburn

// Exchange tokens (PROTOCOL.md §4.6). The parse vectors of conformance/vectors/
// exchange.json (rule 14, §5.3) run in vectors_test.go; these tests pin the response
// side byte for byte: every head written for a request that carried AfterBurn-Exchange
// carries it once, right after the status line, and no other head carries it.

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
)

// errorResponse is the §8.1 error response the library writes, spelled out here rather
// than built by appendErrorResponse so that a fault there cannot hide itself.
func errorResponse(status, typ, message, requestID, token string) string {
	body := `{"type":"` + typ + `","message":"` + message + `"`
	if requestID != "" {
		body += `,"request_id":"` + requestID + `"`
	}
	body += "}"
	head := "HTTP/1.1 " + status + "\r\n"
	if token != "" {
		head += "AfterBurn-Exchange: " + token + "\r\n"
	}
	return head + "Content-Type: application/json\r\nAfterBurn-Error: " + typ + "\r\n" +
		fmt.Sprintf("Content-Length: %d\r\n\r\n", len(body)) + body
}

func TestExchangeToken(t *testing.T) {
	routes := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/hello":
			io.WriteString(w, "hi")
		case "/stream":
			w.Header().Set("Content-Type", "text/plain")
			io.WriteString(w, "ab")
			w.(http.Flusher).Flush()
			io.WriteString(w, "cd")
		case "/204":
			w.WriteHeader(http.StatusNoContent)
		case "/304":
			w.WriteHeader(http.StatusNotModified)
		case "/length":
			w.Header().Set("Content-Length", "2")
			io.WriteString(w, "ok")
		case "/panic":
			io.WriteString(w, "never sent")
			panic("handler fails")
		case "/abort":
			panic(http.ErrAbortHandler)
		case "/read":
			io.ReadAll(r.Body)
			io.WriteString(w, "never sent")
		default:
			t.Errorf("unexpected request %s %s", r.Method, r.RequestURI)
		}
	})
	const (
		hi    = "Content-Type: text/plain; charset=utf-8\r\nContent-Length: 2\r\n\r\nhi"
		chunk = "Content-Type: text/plain\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nab\r\n2\r\ncd\r\n0\r\n\r\n"
	)
	withToken := func(method, target, token string) string {
		return method + " " + target + " HTTP/1.1\r\nHost: fn\r\nAfterBurn-Request-Id: r1\r\nAfterBurn-Exchange: " + token + "\r\n\r\n"
	}
	handlerError := errorResponse("500 Internal Server Error", typeHandlerError, messages[typeHandlerError], "r1", "t9")
	badRequestWith := func(token string) string {
		return errorResponse("400 Bad Request", typeBadRequest, messages[typeBadRequest], "r1", token)
	}
	tests := []struct {
		name, in, want string
		fails          bool // serve returns an error: the worker stops (§8.8)
	}{{
		name: "handler response",
		in:   withToken("GET", "/hello", "a1"),
		want: "HTTP/1.1 200 OK\r\nAfterBurn-Exchange: a1\r\n" + hi,
	}, {
		name: "each request its own, none without",
		in:   withToken("GET", "/hello", "a1") + "GET /hello HTTP/1.1\r\nHost: fn\r\n\r\n" + withToken("GET", "/hello", "Zz09"),
		want: "HTTP/1.1 200 OK\r\nAfterBurn-Exchange: a1\r\n" + hi +
			"HTTP/1.1 200 OK\r\n" + hi +
			"HTTP/1.1 200 OK\r\nAfterBurn-Exchange: Zz09\r\n" + hi,
	}, {
		name: "streamed response",
		in:   withToken("GET", "/stream", "d5"),
		want: "HTTP/1.1 200 OK\r\nAfterBurn-Exchange: d5\r\n" + chunk,
	}, {
		name: "HEAD",
		in:   withToken("HEAD", "/hello", "e6"),
		want: "HTTP/1.1 200 OK\r\nAfterBurn-Exchange: e6\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: 2\r\n\r\n",
	}, {
		name: "HEAD of a streamed response",
		in:   withToken("HEAD", "/stream", "e6"),
		want: "HTTP/1.1 200 OK\r\nAfterBurn-Exchange: e6\r\nContent-Type: text/plain\r\n\r\n",
	}, {
		name: "204",
		in:   withToken("GET", "/204", "e7"),
		want: "HTTP/1.1 204 No Content\r\nAfterBurn-Exchange: e7\r\n\r\n",
	}, {
		name: "304",
		in:   withToken("GET", "/304", "e8"),
		want: "HTTP/1.1 304 Not Modified\r\nAfterBurn-Exchange: e8\r\n\r\n",
	}, {
		name: "the handler's Content-Length",
		in:   withToken("GET", "/length", "f1"),
		want: "HTTP/1.1 200 OK\r\nAfterBurn-Exchange: f1\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: 2\r\n\r\nok",
	}, {
		name: "handler error, then the next request",
		in:   withToken("GET", "/panic", "t9") + withToken("GET", "/hello", "c4"),
		want: handlerError + "HTTP/1.1 200 OK\r\nAfterBurn-Exchange: c4\r\n" + hi,
	}, {
		name: "aborted handler",
		in:   withToken("GET", "/abort", "t9"),
		want: handlerError,
	}, {
		name: "first handshake: no token, the capability listed",
		in:   handshake,
		want: "HTTP/1.1 200 OK\r\nAfterBurn-Protocol: 1\r\nAfterBurn-Library: go/" + version +
			"\r\nAfterBurn-Capabilities: exchange, streams\r\nAfterBurn-Streams: 1024\r\nContent-Length: 0\r\n\r\n",
	}, {
		name: "repeated handshake",
		in:   handshake + strings.Replace(handshake, "Content-Length", "AfterBurn-Exchange: f9\r\nContent-Length", 1),
		want: handshakeReply + "HTTP/1.1 200 OK\r\nAfterBurn-Exchange: f9\r\nAfterBurn-Protocol: 1\r\nAfterBurn-Library: go/" + version +
			"\r\nAfterBurn-Capabilities: exchange, streams\r\nAfterBurn-Streams: 1024\r\nContent-Length: 0\r\n\r\n",
	}, {
		name: "repeated handshake offering no version this library speaks",
		in:   "OPTIONS * HTTP/1.1\r\nHost: afterburn\r\nAfterBurn-Handshake: 2\r\nAfterBurn-Exchange: fa\r\nContent-Length: 0\r\n\r\n",
		want: strings.Replace(errorResponse("400 Bad Request", typeVersionMismatch, messages[typeVersionMismatch], "", "fa"),
			"Content-Length", "AfterBurn-Protocol: 1\r\nContent-Length", 1),
		fails: true,
	}, {
		name:  "rejection after the head: no Host (rule 10)",
		in:    "GET /hello HTTP/1.1\r\nAfterBurn-Request-Id: r1\r\nAfterBurn-Exchange: b1\r\n\r\n",
		want:  badRequestWith("b1"),
		fails: true,
	}, {
		name: "rejection after the head: a chunked body the handler read",
		in: "POST /read HTTP/1.1\r\nHost: fn\r\nAfterBurn-Request-Id: r1\r\nAfterBurn-Exchange: b2\r\n" +
			"Transfer-Encoding: chunked\r\n\r\n2\r\nabX",
		want:  badRequestWith("b2"),
		fails: true,
	}, {
		name: "rejection after the head: a body the handler left",
		in: "POST /hello HTTP/1.1\r\nHost: fn\r\nAfterBurn-Request-Id: r1\r\nAfterBurn-Exchange: b3\r\n" +
			"Transfer-Encoding: chunked\r\n\r\nzz\r\n",
		want:  badRequestWith("b3"),
		fails: true,
	}, {
		name:  "rejection inside the head: no token echoed",
		in:    "GET /hello HTTP/1.1\r\nHost: fn\r\nAfterBurn-Request-Id: r1\r\nAfterBurn-Exchange: b4\r\nBad Name: 1\r\n\r\n",
		want:  badRequestWith(""),
		fails: true,
	}, {
		name:  "rule 14: a second token, even equal",
		in:    "GET /hello HTTP/1.1\r\nHost: fn\r\nAfterBurn-Request-Id: r1\r\nAfterBurn-Exchange: b5\r\nafterburn-exchange: b5\r\n\r\n",
		want:  badRequestWith(""),
		fails: true,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, logs, err := serveString(t, routes, tt.in)
			if tt.fails != (err != nil) {
				t.Errorf("serve returned %v; want an error: %v; log %q", err, tt.fails, logs)
			}
			if out != tt.want {
				t.Errorf("request %q\n got %q\nwant %q", tt.in, out, tt.want)
			}
		})
	}
}

// TestExchangeTokenNotSettable: whatever a handler does with a field named
// AfterBurn-Exchange, the head carries the request's token once, or none without one
// (§4.6); the trailers carry none either.
func TestExchangeTokenNotSettable(t *testing.T) {
	setters := []struct {
		name string
		set  func(h http.Header)
	}{
		{"Set", func(h http.Header) { h.Set("AfterBurn-Exchange", "forged") }},
		{"Add twice", func(h http.Header) { h.Add("afterburn-exchange", "f1"); h.Add("AFTERBURN-EXCHANGE", "f2") }},
		{"map key as spelled in the spec", func(h http.Header) { h["AfterBurn-Exchange"] = []string{"forged"} }},
		{"map key in lower case", func(h http.Header) { h["afterburn-exchange"] = []string{"forged"} }},
		{"empty value", func(h http.Header) { h.Set("AfterBurn-Exchange", "") }},
		{"declared trailer", func(h http.Header) {
			h.Set("Trailer", "AfterBurn-Exchange")
			h.Set("AfterBurn-Exchange", "forged")
		}},
		{"TrailerPrefix trailer", func(h http.Header) { h.Set(http.TrailerPrefix+"AfterBurn-Exchange", "forged") }},
	}
	for _, s := range setters {
		for _, token := range []string{"t1", ""} {
			for _, stream := range []bool{false, true} {
				name := fmt.Sprintf("%s/token=%q/stream=%v", s.name, token, stream)
				t.Run(name, func(t *testing.T) {
					h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
						s.set(w.Header())
						io.WriteString(w, "body")
						if stream {
							w.(http.Flusher).Flush()
						}
						s.set(w.Header()) // after the head: a trailer at most
					})
					in := "GET /x HTTP/1.1\r\nHost: fn\r\n\r\n"
					if token != "" {
						in = "GET /x HTTP/1.1\r\nHost: fn\r\nAfterBurn-Exchange: " + token + "\r\n\r\n"
					}
					out, logs, err := serveString(t, h, in)
					if err != nil {
						t.Fatalf("serve: %v; log %q", err, logs)
					}
					resp := readResponse(t, out)
					got := resp.Header.Values("AfterBurn-Exchange")
					want := []string{token}
					if token == "" {
						want = nil
					}
					if fmt.Sprint(got) != fmt.Sprint(want) {
						t.Errorf("AfterBurn-Exchange in the head: got %q; want %q\n%q", got, want, out)
					}
					if v := resp.Trailer.Values("AfterBurn-Exchange"); len(v) > 0 {
						t.Errorf("AfterBurn-Exchange in the trailers: %q\n%q", v, out)
					}
					if strings.Count(strings.ToLower(out), "afterburn-exchange: ") != len(want) {
						t.Errorf("got %q; want the token once, nowhere else", out)
					}
					if string(resp.body) != "body" {
						t.Errorf("body %q; want body", resp.body)
					}
				})
			}
		}
	}
}
