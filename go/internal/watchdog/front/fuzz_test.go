package front

// The differential fuzz target of PROTOCOL.md §10.6: a client's byte
// stream, several requests long, goes through the guard to the front (and
// from wherever the front hands over, to net/http), and the same stream
// through the guard to net/http alone. Both must see the same requests, in
// the same order, read the same way (method, target, path, query, host,
// fields, framing, body, close), and stop at the same point.

import (
	"bytes"
	"io"
	"log"
	"net"
	"net/http"
	"reflect"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/afterburn-dev/afterburn/go/internal/watchdog/guard"
	"github.com/afterburn-dev/afterburn/go/internal/watchdog/obs"
)

// seen is a request as a handler saw it.
type seen struct {
	Method, RequestURI, Path, RawQuery, EscapedPath, Host string
	ForceQuery                                            bool
	Header                                                http.Header
	ContentLength                                         int64
	TransferEncoding                                      []string
	Close                                                 bool
	Body                                                  string
	BodyErr                                               bool
}

// recorder is the handler of both paths: it reads the body and notes the
// request.
type recorder struct {
	mu  sync.Mutex
	all []seen
}

func (rec *recorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, err := io.ReadAll(r.Body)
	s := seen{Method: r.Method, RequestURI: r.RequestURI, Path: r.URL.Path, RawQuery: r.URL.RawQuery,
		EscapedPath: r.URL.EscapedPath(), ForceQuery: r.URL.ForceQuery, Host: r.Host, Header: r.Header.Clone(),
		ContentLength: r.ContentLength, TransferEncoding: r.TransferEncoding, Close: r.Close,
		Body: string(b), BodyErr: err != nil}
	if len(s.Header) == 0 {
		s.Header = nil
	}
	rec.mu.Lock()
	rec.all = append(rec.all, s)
	rec.mu.Unlock()
	// Every field set, so that net/http adds none of its own (the watchdog
	// sets them too: the exchange and §8.1) and the bytes can be compared.
	// A target with "u" gets a body of unknown length, which both frame
	// themselves (Content-Length when small, chunks when flushed or large).
	switch {
	case strings.Contains(r.RequestURI, "uf"):
		w.Header().Set("Content-Type", "text/plain")
		w.Write([]byte("flushed"))
		w.(http.Flusher).Flush()
		w.Write([]byte("ok"))
		return
	case strings.Contains(r.RequestURI, "ul"):
		w.Header().Set("Content-Type", "text/plain")
		w.Write(bytes.Repeat([]byte("large "), 500))
		return
	case strings.Contains(r.RequestURI, "uc"):
		w.Header().Set("Content-Type", "text/plain")
		w.Header().Set("Connection", "close")
		w.Write([]byte("closing"))
		return
	case strings.Contains(r.RequestURI, "uk"):
		w.Header().Set("Content-Type", "text/plain")
		w.Header().Set("Connection", "keep-alive")
		w.Write([]byte("ok"))
		return
	case strings.Contains(r.RequestURI, "ux"):
		// close among other words: net/http keeps the field and the
		// connection (only a value of exactly "close" closes it).
		w.Header().Set("Content-Type", "text/plain")
		w.Header().Set("Connection", "x close")
		w.Write([]byte("ok"))
		return
	case strings.Contains(r.RequestURI, "un"), strings.Contains(r.RequestURI, "uz"):
		// net/http drops what a bodyless status must not carry:
		// Content-Length, and for 304 Content-Type too.
		w.Header().Set("Content-Type", "text/plain")
		w.Header().Set("Content-Length", "2")
		if strings.Contains(r.RequestURI, "un") {
			w.WriteHeader(http.StatusNotModified)
		} else {
			w.WriteHeader(http.StatusNoContent)
		}
		w.Write([]byte("ok"))
		return
	case strings.Contains(r.RequestURI, "u"):
		w.Header().Set("Content-Type", "text/plain")
		w.Write([]byte("ok"))
		return
	}
	w.Header().Set("Content-Length", "2")
	w.Header().Set("Content-Type", "text/plain")
	w.Header().Set("Date", "Mon, 02 Jan 2006 15:04:05 GMT")
	w.Write([]byte("ok"))
}

// streamConn is a client connection that sends in and then ends; what the
// server writes is discarded. closed is closed at the first Close.
type streamConn struct {
	in     *bytes.Reader
	mu     sync.Mutex
	out    bytes.Buffer
	once   sync.Once
	closed chan struct{}
}

func newStreamConn(in []byte) *streamConn {
	return &streamConn{in: bytes.NewReader(in), closed: make(chan struct{})}
}

func (c *streamConn) Read(p []byte) (int, error) {
	select {
	case <-c.closed:
		return 0, net.ErrClosed
	default:
	}
	// A few bytes at a time now and then, as a network delivers them.
	if len(p) > 7 && c.in.Len()%3 == 0 {
		p = p[:7]
	}
	return c.in.Read(p)
}
func (c *streamConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.out.Write(p)
}

func (c *streamConn) written() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.out.String()
}
func (c *streamConn) Close() error {
	c.once.Do(func() { close(c.closed) })
	return nil
}
func (c *streamConn) LocalAddr() net.Addr {
	return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 8080}
}
func (c *streamConn) RemoteAddr() net.Addr {
	return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 40000}
}
func (c *streamConn) SetDeadline(time.Time) error      { return nil }
func (c *streamConn) SetReadDeadline(time.Time) error  { return nil }
func (c *streamConn) SetWriteDeadline(time.Time) error { return nil }

// oneConnListener accepts c once, then blocks until closed.
type oneConnListener struct {
	c    net.Conn
	once sync.Once
	done chan struct{}
}

func (l *oneConnListener) Accept() (net.Conn, error) {
	var c net.Conn
	l.once.Do(func() { c = l.c })
	if c != nil {
		return c, nil
	}
	<-l.done
	return nil, net.ErrClosed
}
func (l *oneConnListener) Close() error   { return nil }
func (l *oneConnListener) Addr() net.Addr { return l.c.LocalAddr() }

func testGuard() *guard.Guard { return guard.New(32768, 0, obs.NewLogger(io.Discard, false)) }

// throughNetHTTP serves stream through the guard to net/http alone; it
// returns what the handler saw and what the client got.
func throughNetHTTP(t *testing.T, g *guard.Guard, stream []byte) ([]seen, string) {
	rec := &recorder{}
	sc := newStreamConn(stream)
	done := make(chan struct{})
	srv := &http.Server{Handler: rec, ConnContext: guard.WithConn, ErrorLog: quietLog}
	go srv.Serve(guard.Listener{Listener: &oneConnListener{c: sc, done: done}, Guard: g})
	wait(t, sc)
	close(done)
	srv.Close()
	return rec.all, sc.written()
}

// throughFront serves stream through the guard to the front, and what it
// hands over to net/http.
func throughFront(t *testing.T, g *guard.Guard, stream []byte) ([]seen, string, int) {
	rec := &recorder{}
	sc := newStreamConn(stream)
	done := make(chan struct{})
	handoff := NewHandoff(sc.LocalAddr())
	srv := &http.Server{Handler: rec, ConnContext: guard.WithConn, ErrorLog: quietLog}
	go srv.Serve(handoff)
	var took atomic.Int32
	counted := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		took.Add(1)
		rec.ServeHTTP(w, r)
	})
	fs := &Server{Handler: counted, Guard: g, Log: obs.NewLogger(io.Discard, false), Handoff: handoff, BodyMax: 1 << 20}
	go fs.Serve(guard.Listener{Listener: &oneConnListener{c: sc, done: done}, Guard: g})
	wait(t, sc)
	close(done)
	handoff.Close()
	srv.Close()
	return rec.all, sc.written(), int(took.Load())
}

func wait(t *testing.T, sc *streamConn) {
	select {
	case <-sc.closed:
	case <-time.After(10 * time.Second):
		t.Fatal("the connection was not closed in 10 s")
	}
}

var quietLog = newQuietLog()

// FuzzFrontAgainstNetHTTP is the differential target (§10.6).
func FuzzFrontAgainstNetHTTP(f *testing.F) {
	for _, s := range smugglingCorpus {
		f.Add([]byte(s.stream))
	}
	g := testGuard()
	f.Fuzz(func(t *testing.T, stream []byte) {
		compare(t, g, stream)
	})
}

// compare fails t unless stream is read the same way by both paths, and
// answered with the same bytes; it returns what the handler saw, what the
// client got, and how many requests the front took itself.
func compare(t *testing.T, g *guard.Guard, stream []byte) ([]seen, string, int) {
	t.Helper()
	want, wantOut := throughNetHTTP(t, g, stream)
	got, gotOut, took := throughFront(t, g, stream)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("stream %q:\nfront and net/http saw\n%+v\nnet/http alone saw\n%+v", stream, got, want)
	}
	// net/http's own answers (400, 417, 431, 501, ...) carry the time they
	// were made: the two runs may be a second apart.
	gotOut, wantOut = dateless(gotOut), dateless(wantOut)
	if gotOut != wantOut {
		t.Fatalf("stream %q:\nthe client got from the front\n%q\nfrom net/http alone\n%q", stream, gotOut, wantOut)
	}
	return got, gotOut, took
}

func newQuietLog() *log.Logger { return log.New(io.Discard, "", 0) }

var dateField = regexp.MustCompile(`\r\nDate: [^\r\n]*\r\n`)

// dateless is out with every Date field's value made the same.
func dateless(out string) string { return dateField.ReplaceAllString(out, "\r\nDate: -\r\n") }
