package front

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/afterburn-dev/afterburn/go/internal/watchdog/guard"
	"github.com/afterburn-dev/afterburn/go/internal/watchdog/obs"
)

// served is a front on a loopback port, net/http behind it for what it
// hands over, both calling h.
type served struct {
	addr    string
	fs      *Server
	srv     *http.Server
	handoff *Handoff
	took    atomic.Int32 // requests the front took itself
}

func serveFront(t *testing.T, h http.HandlerFunc) *served {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g := guard.New(32768, 2*time.Second, obs.NewLogger(io.Discard, false))
	s := &served{addr: ln.Addr().String(), handoff: NewHandoff(ln.Addr())}
	s.srv = &http.Server{Handler: h, ConnContext: guard.WithConn, ErrorLog: quietLog}
	go s.srv.Serve(s.handoff)
	s.fs = &Server{Guard: g, Log: obs.NewLogger(io.Discard, false), Handoff: s.handoff, BodyMax: 1 << 20,
		ReadTimeout: 2 * time.Second, IdleTimeout: 5 * time.Second,
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			s.took.Add(1)
			h(w, r)
		})}
	go s.fs.Serve(guard.Listener{Listener: ln, Guard: g})
	t.Cleanup(func() {
		s.fs.Close()
		s.handoff.Close()
		s.srv.Close()
	})
	return s
}

func dial(t *testing.T, addr string) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(10 * time.Second))
	return c, bufio.NewReader(c)
}

func readResponse(t *testing.T, br *bufio.Reader, method string) (*http.Response, string) {
	t.Helper()
	resp, err := http.ReadResponse(br, &http.Request{Method: method})
	if err != nil {
		t.Fatalf("reading a response: %v", err)
	}
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading a response body: %v", err)
	}
	return resp, string(b)
}

// A response of unknown length is chunked, with the trailers the handler
// set; HEAD gets the head alone, its Content-Length kept; keep-alive holds.
func TestFrontFramesResponses(t *testing.T) {
	s := serveFront(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/chunked":
			w.Header().Set("Content-Type", "text/plain")
			w.Write([]byte("part one, "))
			w.(http.Flusher).Flush()
			w.Write([]byte("part two"))
			w.Header().Set(http.TrailerPrefix+"X-Sum", "42")
		case "/head":
			writeFramed(w, []byte("hello"))
		}
	})
	c, br := dial(t, s.addr)
	io.WriteString(c, "GET /chunked HTTP/1.1\r\nHost: a\r\n\r\nHEAD /head HTTP/1.1\r\nHost: a\r\n\r\nGET /head HTTP/1.1\r\nHost: a\r\n\r\n")
	resp, body := readResponse(t, br, "GET")
	if body != "part one, part two" || len(resp.TransferEncoding) != 1 || resp.Trailer.Get("X-Sum") != "42" {
		t.Errorf("chunked: body %q, TE %v, trailer %v", body, resp.TransferEncoding, resp.Trailer)
	}
	resp, body = readResponse(t, br, "HEAD")
	if body != "" || resp.ContentLength != 5 || resp.Close {
		t.Errorf("HEAD: body %q, Content-Length %d, close %v", body, resp.ContentLength, resp.Close)
	}
	resp, body = readResponse(t, br, "GET")
	if body != "hello" || resp.Close {
		t.Errorf("GET after HEAD: body %q, close %v", body, resp.Close)
	}
	if n := s.took.Load(); n != 3 {
		t.Errorf("the front took %d requests; want 3", n)
	}
}

// A body the handler left unread is read past when it is small, and the
// connection kept; a large one closes the connection (net/http's rules).
func TestFrontUnreadBody(t *testing.T) {
	s := serveFront(t, func(w http.ResponseWriter, r *http.Request) {
		writeFramed(w, []byte("ok"))
	})
	c, br := dial(t, s.addr)
	io.WriteString(c, "POST /small HTTP/1.1\r\nHost: a\r\nContent-Length: 10\r\n\r\n0123456789GET /next HTTP/1.1\r\nHost: a\r\n\r\n")
	for i := range 2 {
		if resp, body := readResponse(t, br, "GET"); body != "ok" || resp.Close {
			t.Fatalf("response %d: %q, close %v", i, body, resp.Close)
		}
	}
	c2, br2 := dial(t, s.addr)
	big := maxPostHandlerRead + 1000
	go func() {
		io.WriteString(c2, "POST /big HTTP/1.1\r\nHost: a\r\nContent-Length: "+itoa(big)+"\r\n\r\n")
		c2.Write(make([]byte, big))
	}()
	readResponse(t, br2, "POST")
	c2.SetReadDeadline(time.Now().Add(3 * time.Second))
	if _, err := br2.ReadByte(); err != io.EOF {
		t.Errorf("after a response whose large body went unread: %v; want the connection closed (EOF)", err)
	}
}

// A panic with http.ErrAbortHandler leaves the response visibly
// incomplete (PROTOCOL.md §8.7): the connection closes, the body short.
func TestFrontAbortedResponse(t *testing.T) {
	s := serveFront(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "100")
		w.Write([]byte("partial"))
		w.(http.Flusher).Flush()
		panic(http.ErrAbortHandler)
	})
	c, br := dial(t, s.addr)
	io.WriteString(c, "GET / HTTP/1.1\r\nHost: a\r\n\r\n")
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(resp.Body)
	if err != io.ErrUnexpectedEOF || string(b) != "partial" {
		t.Errorf("aborted response: %q, %v; want \"partial\" then io.ErrUnexpectedEOF", b, err)
	}
}

// Shutdown closes idle connections at once, lets a request in its handler
// finish with Connection: close, and takes no new connection.
func TestFrontShutdown(t *testing.T) {
	release := make(chan struct{})
	s := serveFront(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			<-release
		}
		writeFramed(w, []byte("ok"))
	})
	idle, idleBR := dial(t, s.addr)
	io.WriteString(idle, "GET / HTTP/1.1\r\nHost: a\r\n\r\n")
	readResponse(t, idleBR, "GET")
	busy, busyBR := dial(t, s.addr)
	io.WriteString(busy, "GET /slow HTTP/1.1\r\nHost: a\r\n\r\n")
	for s.took.Load() < 2 {
		time.Sleep(time.Millisecond)
	}
	done := make(chan error, 1)
	go func() { done <- s.fs.Shutdown(context.Background()) }()
	idle.SetReadDeadline(time.Now().Add(3 * time.Second))
	if _, err := idleBR.ReadByte(); err != io.EOF {
		t.Errorf("idle connection at shutdown: %v; want EOF", err)
	}
	select {
	case err := <-done:
		t.Fatalf("Shutdown returned (%v) while a request was in its handler", err)
	case <-time.After(50 * time.Millisecond):
	}
	close(release)
	if resp, body := readResponse(t, busyBR, "GET"); body != "ok" || !resp.Close {
		t.Errorf("request finishing during shutdown: %q, close %v; want ok with Connection: close", body, resp.Close)
	}
	if err := <-done; err != nil {
		t.Errorf("Shutdown: %v", err)
	}
	if c, err := net.DialTimeout("tcp", s.addr, time.Second); err == nil {
		c.SetReadDeadline(time.Now().Add(time.Second))
		io.WriteString(c, "GET / HTTP/1.1\r\nHost: a\r\n\r\n")
		if _, err := c.Read(make([]byte, 1)); err == nil {
			t.Error("a connection made after Shutdown was served")
		}
		c.Close()
	}
}

// A head that stalls half-way is the guard's 408 (PROTOCOL.md §10.5), and
// costs no handler; a connection that never sends is closed silently.
func TestFrontSlowHead(t *testing.T) {
	s := serveFront(t, func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasPrefix(r.RequestURI, "/.afterburn-rejected/") {
			t.Errorf("the handler got %s", r.RequestURI)
		}
		w.Header().Set("Connection", "close")
		w.WriteHeader(http.StatusRequestTimeout)
	})
	c, br := dial(t, s.addr)
	io.WriteString(c, "GET / HTTP/1.1\r\nHost: a\r\n")
	start := time.Now()
	resp, _ := readResponse(t, br, "GET")
	if resp.StatusCode != http.StatusRequestTimeout || time.Since(start) < time.Second {
		t.Errorf("stalled head: %d after %v; want 408 after read_timeout (2 s)", resp.StatusCode, time.Since(start))
	}
	quiet, qbr := dial(t, s.addr)
	_ = quiet
	start = time.Now()
	if _, err := qbr.ReadByte(); err != io.EOF || time.Since(start) > 4*time.Second {
		t.Errorf("silent connection: %v after %v; want EOF after read_timeout", err, time.Since(start))
	}
	if n := s.took.Load(); n != 0 {
		t.Errorf("the front took %d requests; want none", n)
	}
}

func itoa(n int) string {
	var b [20]byte
	i := len(b)
	for {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
		if n == 0 {
			return string(b[i:])
		}
	}
}

// writeFramed answers body, framed by its length.
func writeFramed(w http.ResponseWriter, body []byte) {
	w.Header().Set("Content-Length", itoa(len(body)))
	w.Write(body)
}

// A request waiting on its context (as one queued for a lane does) learns
// that its client left (net/http's background read, §10.6); one whose
// client stays goes on to read its body and answer, and the peek took no
// byte of the next request.
func TestFrontNoticesTheClientLeaving(t *testing.T) {
	left := make(chan error, 1)
	s := serveFront(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/wait-for-leaving":
			select {
			case <-r.Context().Done():
				left <- r.Context().Err()
			case <-time.After(5 * time.Second):
				left <- nil
			}
			return
		case "/wait-then-answer":
			select {
			case <-r.Context().Done():
				t.Error("the context ended while the client was there")
			case <-time.After(100 * time.Millisecond):
			}
			b, _ := io.ReadAll(r.Body)
			writeFramed(w, b)
			return
		}
		writeFramed(w, []byte("next"))
	})
	c, _ := dial(t, s.addr)
	io.WriteString(c, "GET /wait-for-leaving HTTP/1.1\r\nHost: a\r\n\r\n")
	time.Sleep(50 * time.Millisecond)
	c.Close()
	if err := <-left; err == nil {
		t.Error("the request's context did not end when its client left")
	}

	c2, br := dial(t, s.addr)
	io.WriteString(c2, "POST /wait-then-answer HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\n")
	time.Sleep(200 * time.Millisecond) // the body comes after the wait on the context
	io.WriteString(c2, "hello")
	io.WriteString(c2, "GET /next HTTP/1.1\r\nHost: a\r\n\r\n")
	if _, body := readResponse(t, br, "POST"); body != "hello" {
		t.Errorf("after the watch: body %q; want hello", body)
	}
	if _, body := readResponse(t, br, "GET"); body != "next" {
		t.Errorf("the request after it: %q; want next", body)
	}
}

// Began is when the front read each request's head, the clock reading the
// handler uses instead of its own (ConnScratch): after the client sent it,
// before the handler ran, and each request its own.
func TestFrontBegan(t *testing.T) {
	var began []time.Time
	var called []time.Time
	s := serveFront(t, func(w http.ResponseWriter, r *http.Request) {
		called = append(called, time.Now())
		began = append(began, w.(ConnScratch).Began())
		writeFramed(w, []byte("ok"))
	})
	c, br := dial(t, s.addr)
	var sent []time.Time
	for i := 0; i < 2; i++ {
		time.Sleep(5 * time.Millisecond)
		sent = append(sent, time.Now())
		io.WriteString(c, "GET / HTTP/1.1\r\nHost: a\r\n\r\n")
		readResponse(t, br, "GET")
	}
	for i := range sent {
		if began[i].Before(sent[i]) || began[i].After(called[i]) {
			t.Errorf("request %d: Began %v; want between its sending %v and the handler's call %v", i, began[i], sent[i], called[i])
		}
	}
}
