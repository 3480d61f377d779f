package front

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/afterburn-dev/afterburn/go/internal/watchdog/guard"
	"github.com/afterburn-dev/afterburn/go/internal/watchdog/obs"
)

// The held path (serve, guard.Conn.Hold) reads a TCP socket only; the
// differential fuzz target's connections are in memory. Here every stream
// of the smuggling corpus and of the fuzz corpus goes to the front over
// loopback TCP in three pieces, a pause between them, so that heads,
// bodies and pipelined requests arrive across the hold's wake-ups (and
// bodies that come later take the way outside it); the handler must see
// what net/http alone saw, and the client get the same bytes.
func TestHeldFrontAgainstNetHTTP(t *testing.T) {
	streams := heldStreams(t)
	g := testGuard()
	for i, stream := range streams {
		want, wantOut := throughNetHTTP(t, g, stream)
		cuts := []int{len(stream) / 3, 2 * len(stream) / 3}
		got, gotOut := throughFrontTCP(t, g, stream, cuts)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("stream %d %q over TCP, cut at %v:\nthe front saw\n%+v\nnet/http alone saw\n%+v", i, stream, cuts, got, want)
		}
		if gotOut, wantOut = dateless(gotOut), dateless(wantOut); gotOut != wantOut {
			t.Fatalf("stream %d %q over TCP, cut at %v:\nthe client got from the front\n%q\nfrom net/http alone\n%q",
				i, stream, cuts, gotOut, wantOut)
		}
	}
}

// After a POST the front drops the CRs and LFs among the next 4 bytes, as
// net/http does, once, however those bytes are spread over wake-ups; a
// body that comes in pieces is read outside the hold and the next request
// inside it again. Every cut of the stream in two.
func TestHeldFrontEveryCut(t *testing.T) {
	stream := []byte("POST /a HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\n\r\nabc\r\n\r\nGET /b HTTP/1.1\r\nHost: h\r\n\r\n" +
		"POST /c HTTP/1.1\r\nHost: h\r\nContent-Length: 1\r\n\r\nx\n\r\nGET /d HTTP/1.1\r\nHost: h\r\n\r\n")
	g := testGuard()
	want, wantOut := throughNetHTTP(t, g, stream)
	if len(want) != 4 {
		t.Fatalf("net/http saw %d requests; the stream has 4", len(want))
	}
	for cut := 1; cut < len(stream); cut++ {
		got, gotOut := throughFrontTCP(t, g, stream, []int{cut})
		if !reflect.DeepEqual(got, want) || dateless(gotOut) != dateless(wantOut) {
			t.Fatalf("cut at %d (%q | %q): the front saw %+v, answered %q; net/http %+v, %q",
				cut, stream[:cut], stream[cut:], got, gotOut, want, wantOut)
		}
	}
}

// heldStreams are the smuggling corpus's streams and the fuzz corpus's.
func heldStreams(t *testing.T) [][]byte {
	var out [][]byte
	for _, s := range smugglingCorpus {
		out = append(out, []byte(s.stream))
	}
	files, err := filepath.Glob(filepath.Join("testdata", "fuzz", "FuzzFrontAgainstNetHTTP", "*"))
	if err != nil || len(files) == 0 {
		t.Fatalf("the fuzz corpus: %v, %d files", err, len(files))
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		// go test fuzz v1, then one []byte("...") line.
		lines := strings.SplitN(strings.TrimSpace(string(b)), "\n", 2)
		if len(lines) != 2 || !strings.HasPrefix(lines[1], "[]byte(") || !strings.HasSuffix(lines[1], ")") {
			t.Fatalf("%s is not a []byte corpus entry", f)
		}
		s, err := strconv.Unquote(strings.TrimSuffix(strings.TrimPrefix(lines[1], "[]byte("), ")"))
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		out = append(out, []byte(s))
	}
	return out
}

// throughFrontTCP serves stream to the front (and what it hands over, to
// net/http) over a loopback connection: the pieces between cuts written
// 3 ms apart, then the client's half-close. It returns what the handler
// saw and all the client got until the front closed.
func throughFrontTCP(t *testing.T, g *guard.Guard, stream []byte, cuts []int) ([]seen, string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	rec := &recorder{}
	handoff := NewHandoff(ln.Addr())
	srv := &http.Server{Handler: rec, ConnContext: guard.WithConn, ErrorLog: quietLog}
	go srv.Serve(handoff)
	fs := &Server{Handler: rec, Guard: g, Log: obs.NewLogger(io.Discard, false), Handoff: handoff, BodyMax: 1 << 20}
	go fs.Serve(guard.Listener{Listener: ln, Guard: g})
	defer func() {
		fs.Close()
		handoff.Close()
		srv.Close()
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	var out bytes.Buffer
	read := make(chan error, 1)
	go func() {
		_, err := io.Copy(&out, c)
		read <- err
	}()
	at := 0
	for _, cut := range append(cuts, len(stream)) {
		if cut > at {
			if _, err := c.Write(stream[at:cut]); err != nil {
				break // the front closed early, as net/http may
			}
			at = cut
		}
		time.Sleep(3 * time.Millisecond)
	}
	c.(*net.TCPConn).CloseWrite()
	if err := <-read; err != nil && !isReset(err) {
		t.Fatalf("reading the answers: %v", err)
	}
	rec.mu.Lock() // the handlers ended before the connection did
	defer rec.mu.Unlock()
	return rec.all, out.String()
}

// isReset is a connection reset: a server that closes with bytes unread
// resets it, after its answer.
func isReset(err error) bool { return strings.Contains(err.Error(), "connection reset") }

// Server.Close ends a connection at once though its goroutine holds the
// socket's wait through an exchange: the client sees the end, and the
// handler's writes fail.
func TestHeldCloseDuringExchange(t *testing.T) {
	release, wrote := make(chan struct{}), make(chan error, 1)
	var in atomic.Int32
	s := serveFront(t, func(w http.ResponseWriter, r *http.Request) {
		in.Add(1)
		<-release
		w.Header().Set("Content-Length", "2")
		_, err := w.Write([]byte("ok"))
		if err == nil {
			err = http.NewResponseController(w).Flush()
		}
		wrote <- err
	})
	c, br := dial(t, s.addr)
	io.WriteString(c, "GET / HTTP/1.1\r\nHost: a\r\n\r\n")
	for in.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	closed := make(chan struct{})
	go func() {
		s.fs.Close()
		close(closed)
	}()
	select {
	case <-closed:
	case <-time.After(2 * time.Second):
		t.Fatal("Server.Close waited for the exchange")
	}
	c.SetReadDeadline(time.Now().Add(2 * time.Second))
	if _, err := br.ReadByte(); err == nil {
		t.Error("the client read a byte of a connection closed before its answer")
	}
	close(release)
	if err := <-wrote; err == nil {
		t.Error("the handler's answer on a closed connection did not fail")
	}
}

// A request answered inside the hold whose handler waits on its context
// (queued): the watch, on a descriptor of its own, sees the client there
// (its next request) without taking a byte of it, and sees it leave.
func TestHeldWatch(t *testing.T) {
	left := make(chan error, 1)
	s := serveFront(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/wait":
			select {
			case <-r.Context().Done():
				left <- r.Context().Err()
				return
			case <-time.After(100 * time.Millisecond):
			}
			b, _ := io.ReadAll(r.Body)
			writeFramed(w, b)
			return
		}
		writeFramed(w, []byte("next"))
	})
	c, br := dial(t, s.addr)
	io.WriteString(c, "POST /wait HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nhelloGET /next HTTP/1.1\r\nHost: a\r\n\r\n")
	if _, body := readResponse(t, br, "POST"); body != "hello" {
		t.Errorf("the waiting request: %q; want hello", body)
	}
	if _, body := readResponse(t, br, "GET"); body != "next" {
		t.Errorf("the request after it: %q; want next", body)
	}
	select {
	case err := <-left:
		t.Fatalf("the context ended (%v) with the client there", err)
	default:
	}
	io.WriteString(c, "GET /wait HTTP/1.1\r\nHost: a\r\n\r\n")
	time.Sleep(20 * time.Millisecond) // watchDelay, and the watch begun
	c.Close()
	select {
	case err := <-left:
		if err == nil {
			t.Error("the context ended without an error")
		}
	case <-time.After(2 * time.Second):
		t.Error("the request's context did not end when its client left")
	}
}
