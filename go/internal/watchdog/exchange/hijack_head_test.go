package exchange

// hijackedResponse stands in for net/http's ResponseWriter on a spliced
// exchange (PROTOCOL.md §6.1), so a client must not tell its responses from
// net/http's: the same handler answers the same request through a net/http
// server and through a hijackedResponse, and the two heads are compared
// field by field in order (Date masked where neither handler set it), the
// body bytes (chunks and trailers included) exactly, and whether the
// connection is kept for a next request.

import (
	"bufio"
	"bytes"
	"io"
	"log"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"
)

// headCase is a request and what the handler, written as the exchange
// writes a response (fields, WriteHeader, body, flushes, trailers), answers.
type headCase struct {
	id      string
	request string // the request's head; its target is /c/<id>
	answer  func(w http.ResponseWriter)
}

func fixedAnswer(w http.ResponseWriter) {
	h := w.Header()
	h["Content-Length"] = []string{"5"}
	h["Content-Type"] = []string{"text/plain"}
	h["X-Multi"] = []string{"a", "b"}
	h["Date"] = []string{"Mon, 02 Jan 2006 15:04:05 GMT"}
	w.WriteHeader(http.StatusOK)
	w.Write([]byte("hello"))
}

// chunkedAnswer is a worker's chunked response as forward passes it on:
// Transfer-Encoding in the header, no Content-Type sniffed, a trailer set
// after the body.
func chunkedAnswer(w http.ResponseWriter) {
	h := w.Header()
	h["Transfer-Encoding"] = []string{"chunked"}
	h["Trailer"] = []string{"X-Sum"}
	h["Content-Type"] = nil
	w.WriteHeader(http.StatusOK)
	w.Write([]byte("part one, "))
	http.NewResponseController(w).Flush()
	w.Write([]byte("part two"))
	h[http.TrailerPrefix+"X-Sum"] = []string{"42"}
}

func lengthAnswer(status int, fields ...string) func(w http.ResponseWriter) {
	return func(w http.ResponseWriter) {
		h := w.Header()
		h["Content-Length"] = []string{"2"}
		for i := 0; i+1 < len(fields); i += 2 {
			h[fields[i]] = append(h[fields[i]], fields[i+1])
		}
		w.WriteHeader(status)
		w.Write([]byte("ok"))
	}
}

var headCases = []headCase{
	{"fixed", "GET /c/fixed HTTP/1.1\r\nHost: a\r\n\r\n", fixedAnswer},
	{"chunked-trailers", "GET /c/chunked-trailers HTTP/1.1\r\nHost: a\r\n\r\n", chunkedAnswer},
	{"handler-close", "GET /c/handler-close HTTP/1.1\r\nHost: a\r\n\r\n", lengthAnswer(200, "Connection", "close", "Content-Type", "text/plain")},
	{"handler-keep-alive", "GET /c/handler-keep-alive HTTP/1.1\r\nHost: a\r\n\r\n", lengthAnswer(200, "Connection", "keep-alive", "Content-Type", "text/plain")},
	{"client-close", "GET /c/client-close HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n", fixedAnswer},
	{"client-close-among-spaces", "GET /c/client-close-among-spaces HTTP/1.1\r\nHost: a\r\nConnection: x close\r\n\r\n", fixedAnswer},
	{"head", "HEAD /c/head HTTP/1.1\r\nHost: a\r\n\r\n", fixedAnswer},
	{"head-chunked", "HEAD /c/head-chunked HTTP/1.1\r\nHost: a\r\n\r\n", chunkedAnswer},
	{"no-content", "GET /c/no-content HTTP/1.1\r\nHost: a\r\n\r\n", lengthAnswer(http.StatusNoContent, "Content-Type", "text/plain")},
	{"not-modified", "GET /c/not-modified HTTP/1.1\r\nHost: a\r\n\r\n", lengthAnswer(http.StatusNotModified, "Content-Type", "text/plain", "Etag", `"x"`)},
	{"unknown-status", "GET /c/unknown-status HTTP/1.1\r\nHost: a\r\n\r\n", lengthAnswer(299, "Content-Type", "text/plain")},
	{"http10-fixed", "GET /c/http10-fixed HTTP/1.0\r\n\r\n", fixedAnswer},
	{"http10-chunked", "GET /c/http10-chunked HTTP/1.0\r\n\r\n", chunkedAnswer},
	{"http10-keep-alive", "GET /c/http10-keep-alive HTTP/1.0\r\nConnection: keep-alive\r\n\r\n", fixedAnswer},
	{"http10-keep-alive-chunked", "GET /c/http10-keep-alive-chunked HTTP/1.0\r\nConnection: keep-alive\r\n\r\n", chunkedAnswer},
	{"http10-handler-close", "GET /c/http10-handler-close HTTP/1.0\r\nConnection: keep-alive\r\n\r\n", lengthAnswer(200, "Connection", "close", "Content-Type", "text/plain")},
}

func TestHijackedHeadAsNetHTTP(t *testing.T) {
	byPath := map[string]func(http.ResponseWriter){"/next": lengthAnswer(200, "Content-Type", "text/plain")}
	for _, tc := range headCases {
		byPath["/c/"+tc.id] = tc.answer
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{
		Handler:  http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { byPath[r.URL.Path](w) }),
		ErrorLog: log.New(io.Discard, "", 0),
	}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })

	for _, tc := range headCases {
		t.Run(tc.id, func(t *testing.T) {
			t.Parallel()
			// A next request follows the case's: net/http answers it when it
			// keeps the connection, then closes.
			next := "GET /next HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n"
			if strings.Contains(tc.request, "HTTP/1.0") {
				next = "GET /next HTTP/1.0\r\n\r\n"
			}
			want := netHTTPAnswer(t, ln.Addr().String(), tc.request+next)

			req, err := http.ReadRequest(bufio.NewReader(strings.NewReader(tc.request)))
			if err != nil {
				t.Fatal(err)
			}
			var got bytes.Buffer
			hj := &hijackedResponse{bw: bufio.NewWriter(&got), req: req, header: make(http.Header)}
			tc.answer(hj)
			if err := hj.end(); err != nil {
				t.Fatal(err)
			}

			wantHead, wantBody, wantRest := splitResponse(t, want, req)
			gotHead, gotBody, gotRest := splitResponse(t, got.Bytes(), req)
			if !slices.Equal(gotHead, wantHead) {
				t.Errorf("%q: head\n%s\nwant net/http's\n%s", tc.request, strings.Join(gotHead, "\n"), strings.Join(wantHead, "\n"))
			}
			if !bytes.Equal(gotBody, wantBody) || len(gotRest) > 0 {
				t.Errorf("%q: body %q (then %q); want %q", tc.request, gotBody, gotRest, wantBody)
			}
			if kept := len(wantRest) > 0; hj.keep != kept {
				t.Errorf("%q: connection kept %v; net/http kept it %v (answered next: %q)", tc.request, hj.keep, kept, wantRest)
			}
		})
	}
}

// netHTTPAnswer sends requests on a connection of its own and returns every
// byte that comes back until net/http closes it.
func netHTTPAnswer(t *testing.T, addr, requests string) []byte {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c, requests); err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(c)
	if err != nil {
		t.Fatalf("%q: reading net/http's answer: %v (after %q)", requests, err, b)
	}
	return b
}

// splitResponse takes the first response from b: its head's lines (a Date
// value masked), its body bytes as framed on the wire, and what follows.
func splitResponse(t *testing.T, b []byte, req *http.Request) (head []string, body, rest []byte) {
	t.Helper()
	end := bytes.Index(b, []byte("\r\n\r\n"))
	if end < 0 {
		t.Fatalf("no whole head in %q", b)
	}
	for _, line := range strings.Split(string(b[:end]), "\r\n") {
		if strings.HasPrefix(line, "Date: ") && line != "Date: Mon, 02 Jan 2006 15:04:05 GMT" {
			line = "Date: (now)"
		}
		head = append(head, line)
	}
	rd := bytes.NewReader(b)
	br := bufio.NewReader(rd)
	resp, err := http.ReadResponse(br, req)
	if err != nil {
		t.Fatalf("reading %q: %v", b, err)
	}
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		t.Fatalf("reading the body of %q: %v", b, err)
	}
	consumed := len(b) - rd.Len() - br.Buffered()
	return head, b[end+4 : consumed], b[consumed:]
}
