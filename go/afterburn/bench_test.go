package afterburn

import (
	"bufio"
	"io"
	"net/http"
	"testing"
)

// typicalGET is a request as the watchdog writes it (PROTOCOL.md §4.5, §5) to a
// worker that listed the exchange capability (§4.6).
const typicalGET = "GET /hello?name=world HTTP/1.1\r\n" +
	"Host: fn.example.com\r\n" +
	"User-Agent: curl/8.5.0\r\n" +
	"Accept: */*\r\n" +
	"Accept-Encoding: gzip, deflate\r\n" +
	"X-Forwarded-For: 203.0.113.7\r\n" +
	"AfterBurn-Request-Id: 6f1c0a4e2b9d4c1f8a7e5d3c2b1a0f9e\r\n" +
	"AfterBurn-Timeout-Ms: 9998\r\n" +
	"AfterBurn-Exchange: 1f3a7c9e0b2d4f6a\r\n" +
	"\r\n"

// requestPerRead returns the same request on every Read, as a pipe does when the
// watchdog writes one request and waits for its response.
type requestPerRead struct{ b []byte }

func (r *requestPerRead) Read(p []byte) (int, error) { return copy(p, r.b), nil }

var helloHandler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	io.WriteString(w, "hello world\n")
})

// BenchmarkExchange measures the library's cost per exchange: parse a typical GET,
// build its *http.Request and context, run a handler that writes a small response,
// frame and flush it.
func BenchmarkExchange(b *testing.B) {
	c := newConn(&requestPerRead{[]byte(typicalGET)}, io.Discard, defaultLimits)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ { // not b.Loop: the module's go directive is 1.22 (go.mod)
		ex, err := c.readRequest()
		if err != nil {
			b.Fatal(err)
		}
		if err := c.serveExchange(helloHandler, ex); err != nil {
			b.Fatal(err)
		}
		ex.cancel()
	}
}

// BenchmarkParse is the request half of BenchmarkExchange.
func BenchmarkParse(b *testing.B) {
	c := newConn(&requestPerRead{[]byte(typicalGET)}, io.Discard, defaultLimits)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ { // not b.Loop: the module's go directive is 1.22 (go.mod)
		ex, err := c.readRequest()
		if err != nil {
			b.Fatal(err)
		}
		ex.cancel()
	}
}

// BenchmarkNetHTTPReadRequest is what net/http's lax parser costs on the same bytes,
// before any of the §4.3 checks it lacks, for comparison with BenchmarkParse.
func BenchmarkNetHTTPReadRequest(b *testing.B) {
	br := bufio.NewReaderSize(&requestPerRead{[]byte(typicalGET)}, readBufferSize)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ { // not b.Loop: the module's go directive is 1.22 (go.mod)
		r, err := http.ReadRequest(br)
		if err != nil {
			b.Fatal(err)
		}
		r.Body.Close()
	}
}
