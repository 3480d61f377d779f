package watchdog

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/afterburn-dev/afterburn/go/internal/watchdog/config"
	"github.com/afterburn-dev/afterburn/go/internal/watchdog/obs"
	"github.com/afterburn-dev/afterburn/go/internal/watchdog/spawn"
)

// BenchmarkWatchdog measures one small request through the watchdog and a
// worker, against BenchmarkRawPipeProxy: the least an HTTP front of a pipe
// child can do (one child behind a mutex, nothing checked).
func BenchmarkWatchdog(b *testing.B) {
	t := &testing.T{}
	h := start(t, func(c *config.Config) { c.Log = io.Discard })
	benchGets(b, h.url, h.client)
	h.stop()
}

// BenchmarkWatchdogNetHTTPOnly is BenchmarkWatchdog with the front off
// (PROTOCOL.md §10.6): their difference is the front's saving, allocations
// included (the client's, in this process, are in both).
func BenchmarkWatchdogNetHTTPOnly(b *testing.B) {
	t := &testing.T{}
	h := start(t, func(c *config.Config) { c.Log = io.Discard; c.NetHTTPOnly = true })
	benchGets(b, h.url, h.client)
	h.stop()
}

// BenchmarkWatchdogOneConnection is BenchmarkWatchdog's serial case from a
// client that allocates nothing: one keep-alive connection, the request's
// bytes written as they are, the response read into a fixed buffer. Its
// allocations per request are the watchdog's own (the worker is a process of
// its own), which -benchmem then counts.
func BenchmarkWatchdogOneConnection(b *testing.B) {
	t := &testing.T{}
	h := start(t, func(c *config.Config) { c.Log = io.Discard })
	defer h.stop()
	c, err := net.Dial("tcp", h.addr)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	req := []byte("GET /bench HTTP/1.1\r\nHost: bench\r\n\r\n")
	var buf [4096]byte
	get := func() {
		if _, err := c.Write(req); err != nil {
			b.Fatal(err)
		}
		for n := 0; ; {
			k, err := c.Read(buf[n:])
			n += k
			if err != nil {
				b.Fatalf("after %q: %v", buf[:n], err)
			}
			if end := bytes.Index(buf[:n], []byte("\r\n\r\n")); end >= 0 {
				length, ok := responseLength(buf[:end])
				if !ok {
					b.Fatalf("no Content-Length in %q", buf[:end])
				}
				if n >= end+4+length {
					if !bytes.HasPrefix(buf[end+4:n], []byte("ok")) {
						b.Fatalf("got %q", buf[:n])
					}
					return
				}
			}
		}
	}
	get()
	for b.Loop() {
		get()
	}
}

// responseLength is the Content-Length of a response head, read without
// allocating.
func responseLength(head []byte) (int, bool) {
	field := []byte("\r\nContent-Length: ")
	i := bytes.Index(head, field)
	if i < 0 {
		return 0, false
	}
	n, digits := 0, 0
	for _, c := range head[i+len(field):] {
		if c < '0' || c > '9' {
			break
		}
		n, digits = n*10+int(c-'0'), digits+1
	}
	return n, digits > 0
}

func BenchmarkRawPipeProxy(b *testing.B) {
	cfg := testConfig()
	cfg.Env = []string{"AFTERBURN_TEST_CHILD=1"}
	log := obs.NewLogger(io.Discard, false)
	w, err := spawn.StartWorker(&cfg, 1, log, nil, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer w.Kill()
	if err := w.Handshake(time.Now().Add(10*time.Second), false, log); err != nil {
		b.Fatal(err)
	}
	var mu sync.Mutex
	srv := &http.Server{Handler: http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		w.First().BW.WriteString("GET " + r.RequestURI + " HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n")
		w.First().BW.Flush()
		resp, err := http.ReadResponse(w.First().BR, r)
		if err != nil {
			panic(err)
		}
		for k, vv := range resp.Header {
			rw.Header()[k] = vv
		}
		rw.WriteHeader(resp.StatusCode)
		io.Copy(rw, resp.Body)
	})}
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	go srv.Serve(ln)
	defer srv.Close()
	benchGets(b, "http://"+ln.Addr().String(), &http.Client{})
}

func benchGets(b *testing.B, url string, c *http.Client) {
	for _, parallel := range []bool{false, true} {
		name := "serial"
		if parallel {
			name = "parallel"
		}
		b.Run(name, func(b *testing.B) {
			get := func() {
				resp, err := c.Get(url + "/bench")
				if err != nil {
					b.Fatal(err)
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if !strings.HasPrefix(string(body), "ok") {
					b.Fatalf("got %q", body)
				}
			}
			get()
			b.ResetTimer()
			if !parallel {
				for b.Loop() {
					get()
				}
				return
			}
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					get()
				}
			})
		})
	}
}
