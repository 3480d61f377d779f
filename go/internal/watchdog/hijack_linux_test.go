package watchdog

// Bodies of at least spliceBodyMin go by splice(2) on a connection taken
// from net/http and given back after the exchange (hijack.go): the client
// sees the exchanges of net/http's path.

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/afterburn-dev/afterburn/go/internal/watchdog/config"
	"github.com/afterburn-dev/afterburn/go/internal/watchdog/exchange"
	"github.com/afterburn-dev/afterburn/go/internal/watchdog/internal/testworker"
	"github.com/afterburn-dev/afterburn/go/internal/watchdog/pool"
	"github.com/afterburn-dev/afterburn/go/internal/watchdog/wire"
)

// bigClient is one request with a large body on a connection of its own.
type bigClient struct {
	t    *testing.T
	c    net.Conn
	br   *bufio.Reader
	sent chan error // the upload's result
}

// sendBig sends head and body on a new connection, in the background and in
// one write, so that the watchdog may read body bytes with the head; body
// may end with more requests. With expect100 it writes the head first and
// reads the 100 Continue it asks for.
func (h *harness) sendBig(head string, body []byte, expect100 bool) *bigClient {
	h.t.Helper()
	c, err := net.Dial("tcp", h.addr)
	if err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(waitLimit)) // a hang fails the test instead of the run
	bc := &bigClient{t: h.t, c: c, br: bufio.NewReader(c), sent: make(chan error, 1)}
	out := append([]byte(head), body...)
	if expect100 {
		if _, err := io.WriteString(c, head); err != nil {
			h.t.Fatal(err)
		}
		resp, err := http.ReadResponse(bc.br, nil)
		if err != nil || resp.StatusCode != http.StatusContinue {
			h.t.Fatalf("%q: before the body got %v, %v; want 100 Continue", head, resp, err)
		}
		out = body
	}
	go func() {
		_, err := c.Write(out)
		bc.sent <- err
	}()
	return bc
}

// response reads the next final response and as much of its body as comes.
func (bc *bigClient) response() (*http.Response, []byte, error) {
	bc.t.Helper()
	resp, err := http.ReadResponse(bc.br, &http.Request{Method: "POST"})
	if err != nil {
		bc.t.Fatalf("reading the response: %v", err)
	}
	b, err := io.ReadAll(resp.Body)
	return resp, b, err
}

// closed reports whether the watchdog ended the connection, with a FIN, after
// the response.
func (bc *bigClient) closed() bool {
	_, err := bc.br.ReadByte()
	return err == io.EOF
}

// next sends one more request on the connection and reads its response.
func (bc *bigClient) next(request string) (*http.Response, string) {
	bc.t.Helper()
	if _, err := io.WriteString(bc.c, request); err != nil {
		bc.t.Fatalf("%q after the large request: %v", request, err)
	}
	resp, b, err := bc.response()
	if err != nil {
		bc.t.Fatalf("%q after the large request: reading the body: %v", request, err)
	}
	return resp, string(b)
}

func bigHead(target string, n int, fields ...string) string {
	head := fmt.Sprintf("POST %s HTTP/1.1\r\nHost: fn\r\nContent-Length: %d\r\n", target, n)
	for _, f := range fields {
		head += f + "\r\n"
	}
	return head + "\r\n"
}

// TestSplicedEcho: §6.1, §6.2 — a body of several MiB echoed byte for byte,
// with and without Expect: 100-continue (§5.4), and after a head long enough
// that the guard holds body bytes read with it (§10.5); the access log and
// metrics count it (§9.5, §10.4). The connection carries the next request,
// unless the client asked for it to close; the worker's response pipe is
// left in step: the same worker answers the next requests.
func TestSplicedEcho(t *testing.T) {
	t.Parallel()
	h := start(t, nil)
	_, pid := h.Get("/pid")
	payload := testworker.Patterned(5<<20 + 7)
	// Over 4 KiB of short lines: the guard reads head and body bytes into
	// its grown buffer, and net/http's 4 KiB reader leaves some with it.
	var pad []string
	for i := range 80 {
		pad = append(pad, fmt.Sprintf("X-Pad-%02d: %s", i, strings.Repeat("p", 50)))
	}
	longHead := strings.Join(pad, "\r\n")
	for _, tc := range []struct {
		id     string
		expect bool
		field  string
	}{
		{"plain", false, "X-Plain: 1"},
		{"expect", true, "Expect: 100-continue"},
		{"long-head", false, longHead},
		{"close", false, "Connection: close"},
	} {
		id, expect := tc.id, tc.expect
		bc := h.sendBig(bigHead("/echo", len(payload), "X-Request-Id: "+id, tc.field), payload, expect)
		resp, body, err := bc.response()
		if err != nil || resp.StatusCode != 200 || !bytes.Equal(body, payload) {
			t.Fatalf("%s: status %d, %d of %d bytes back, equal %v, %v",
				id, resp.StatusCode, len(body), len(payload), bytes.Equal(body, payload), err)
		}
		wantClose := id == "close"
		if resp.ContentLength != int64(len(payload)) || resp.Close != wantClose || resp.Header.Get("AfterBurn-Request-Id") != id {
			t.Errorf("%s: Content-Length %d, Connection: close %v, AfterBurn-Request-Id %q; want %d, %v, %q",
				id, resp.ContentLength, resp.Close, resp.Header.Get("AfterBurn-Request-Id"), len(payload), wantClose, id)
		}
		if err := <-bc.sent; err != nil {
			t.Errorf("%s: upload: %v", id, err)
		}
		h.logs.waitContains(t, fmt.Sprintf("id=%s method=POST path=/echo status=200 bytes=%d ", id, len(payload)))
		if wantClose {
			if !bc.closed() {
				t.Errorf("%s: the connection stayed open", id)
			}
			continue
		}
		resp, again := bc.next("GET /pid HTTP/1.1\r\nHost: fn\r\n\r\n")
		wantBody(t, resp, again, 200, pid)
	}
	resp, again := h.Get("/pid")
	wantBody(t, resp, again, 200, pid)
	// The last /pid may not be counted yet.
	if got := counter(t, h.wd.m.Requests, "200"); got < 8 {
		t.Errorf(`requests_total{code="200"} = %v; want at least 8`, got)
	}
}

// TestSplicedGuardFollows: §10.5 — after a spliced body the guard finds the
// next head where it starts: one sent right after the body, with bare LFs,
// is rejected.
func TestSplicedGuardFollows(t *testing.T) {
	t.Parallel()
	h := start(t, nil)
	payload := testworker.Patterned(2 << 20)
	bc := h.sendBig(bigHead("/echo", len(payload)), append(payload, "GET /x HTTP/1.1\nHost: fn\n\n"...), false)
	resp, body, err := bc.response()
	if err != nil || resp.StatusCode != 200 || !bytes.Equal(body, payload) {
		t.Fatalf("status %d, %d of %d bytes back, equal %v, %v",
			resp.StatusCode, len(body), len(payload), bytes.Equal(body, payload), err)
	}
	resp, body, err = bc.response()
	if err != nil {
		t.Fatal(err)
	}
	wantError(t, resp, string(body), 400, wire.ErrBadRequest)
	if !resp.Close {
		t.Errorf("the rejection did not close the connection")
	}
}

// TestSplicedChunkedResponse: §4.4 — a chunked answer to a spliced request
// keeps its trailers; an HTTP/1.0 client, which cannot take chunks, gets the
// body delimited by the close, although it asked for keep-alive, as net/http
// answers it, and its Expect is ignored (RFC 9110 §10.1.1).
func TestSplicedChunkedResponse(t *testing.T) {
	t.Parallel()
	h := start(t, nil)
	payload := testworker.Patterned(3 << 20)
	sum := sha256.Sum256(payload)
	digest := hex.EncodeToString(sum[:])
	for _, proto := range []string{"HTTP/1.1", "HTTP/1.0"} {
		head := fmt.Sprintf("POST /digest %s\r\nHost: fn\r\nContent-Length: %d\r\n\r\n", proto, len(payload))
		if proto == "HTTP/1.0" {
			head = head[:len(head)-2] + "Expect: 100-continue\r\nConnection: keep-alive\r\n\r\n"
		}
		bc := h.sendBig(head, payload, false)
		resp, body, err := bc.response()
		if err != nil || resp.StatusCode != 200 || string(body) != digest {
			t.Fatalf("%s: status %d, body %q, %v; want 200 %q", proto, resp.StatusCode, body, err, digest)
		}
		chunked := len(resp.TransferEncoding) == 1 && resp.TransferEncoding[0] == "chunked"
		if proto == "HTTP/1.1" && (!chunked || resp.Trailer.Get("X-Length") != strconv.Itoa(len(payload))) {
			t.Errorf("%s: Transfer-Encoding %v, trailers %v; want chunked and X-Length: %d",
				proto, resp.TransferEncoding, resp.Trailer, len(payload))
		}
		// As net/http answers HTTP/1.0: no Connection field (its close is
		// told to HTTP/1.1 clients only), the connection closed.
		if proto == "HTTP/1.0" && (chunked || resp.ProtoMinor != 0 || resp.Header["Connection"] != nil || !resp.Close) {
			t.Errorf("%s: %s, Transfer-Encoding %v, Connection %q, close %v; want HTTP/1.0 delimited by the close, no Connection field",
				proto, resp.Proto, resp.TransferEncoding, resp.Header["Connection"], resp.Close)
		}
		if err := <-bc.sent; err != nil {
			t.Errorf("%s: upload: %v", proto, err)
		}
	}
}

// TestSplicedEarlyAnswer: §6.3 — a worker that answers before it reads the
// body still gets all of it, and serves on: the client, told nothing of a
// close, sends it all, then its next request on the same connection. The
// worker answers a while after the head, so that the request pipe fills
// meanwhile; that takes far more than its 1 MiB, as a pipe counts spliced
// pages by its slots, not by bytes.
func TestSplicedEarlyAnswer(t *testing.T) {
	t.Parallel()
	h := start(t, func(c *config.Config) { c.MaxRequestBody = 64 << 20 })
	_, pid := h.Get("/pid")
	payload := testworker.Patterned(48 << 20)
	bc := h.sendBig(bigHead("/sleep?ms=100", len(payload)), payload, false)
	resp, body, err := bc.response()
	if err != nil {
		t.Fatal(err)
	}
	wantBody(t, resp, string(body), 200, "slept 100")
	if err := <-bc.sent; err != nil {
		t.Errorf("upload: %v", err)
	}
	resp, again := bc.next("GET /pid HTTP/1.1\r\nHost: fn\r\n\r\n")
	wantBody(t, resp, again, 200, pid)
}

// TestSplicedWorkerCrash: §8.4, §8.7 — a worker that dies mid-body: 502
// worker_crashed before the head, which an HTTP client gets although it was
// still sending a body larger than every buffer on the way (the close
// lingers); after the head, a response visibly incomplete, framed by
// Content-Length or chunked. The worker is replaced each time.
func TestSplicedWorkerCrash(t *testing.T) {
	t.Parallel()
	h := start(t, func(c *config.Config) { c.MaxRequestBody = 64 << 20 })
	crashes := 0
	replaced := func() {
		t.Helper()
		crashes++
		h.waitState("a new idle worker", func(st pool.Status, ready bool) bool { return st.Idle == 1 })
		if got := counter(t, h.wd.m.Restarts, "crashed"); got != float64(crashes) {
			t.Errorf(`restarts_total{reason="crashed"} = %v; want %d`, got, crashes)
		}
	}
	large := testworker.Patterned(32 << 20)
	for range 3 {
		req, _ := http.NewRequest("POST", h.url+"/crash-after?n=1048576", bytes.NewReader(large))
		resp, body := h.do(req)
		wantError(t, resp, body, 502, wire.ErrWorkerCrashed)
		replaced()
	}
	payload := testworker.Patterned(6 << 20)
	for _, target := range []string{"/crash-after?n=1048576&head=1", "/crash-mid"} {
		bc := h.sendBig(bigHead(target, len(payload)), payload, false)
		resp, body, err := bc.response()
		if resp.StatusCode != 200 || err == nil || len(body) >= len(payload) {
			t.Errorf("%s: status %d, %d of %d bytes, %v; want 200 and a read error",
				target, resp.StatusCode, len(body), len(payload), err)
		}
		replaced()
	}
	resp, body := h.Get("/x")
	wantBody(t, resp, body, 200, "ok GET /x")
}

// TestSplicedNotRetried: §9.3 — a spliced body is never kept for a replay,
// so a worker that exits with the request unread in its pipe costs it a 502
// instead of a second attempt (which would find the connection taken).
func TestSplicedNotRetried(t *testing.T) {
	t.Parallel()
	h := start(t, nil)
	resp, body := h.Get("/exit-later")
	wantBody(t, resp, body, 200, "bye")
	req, _ := http.NewRequest("POST", h.url+"/echo", bytes.NewReader(testworker.Patterned(exchange.SpliceBodyMin)))
	resp, body = h.do(req)
	wantError(t, resp, body, 502, wire.ErrWorkerCrashed)
}

// TestSplicedDeadline: §5.2, §8.6, §8.7, §6.4 — the client sends part of
// the body and stalls. At the deadline: 504 before the head, an incomplete
// response after it. Past read_timeout first: 400. The worker is replaced.
func TestSplicedDeadline(t *testing.T) {
	t.Parallel()
	n := 4 << 20
	part := testworker.Patterned(n)[:1<<20]
	execTimeout := func(c *config.Config) { c.ExecTimeout = 500 * time.Millisecond }
	readTimeout := func(c *config.Config) { c.ReadTimeout = 500 * time.Millisecond }
	for _, tc := range []struct {
		name, path string
		mut        func(*config.Config)
		status     int // 200: the response is cut short
		reason     string
	}{
		{"exec_timeout before the head", "/headers", execTimeout, 504, "timeout"},
		{"exec_timeout after the head", "/echo", execTimeout, 200, "timeout"},
		{"read_timeout", "/headers", readTimeout, 400, "request_aborted"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := start(t, tc.mut)
			bc := h.sendBig(bigHead(tc.path, n), part, false)
			resp, body, err := bc.response()
			switch tc.status {
			case 504:
				wantError(t, resp, string(body), 504, wire.ErrTimeout)
			case 400:
				wantError(t, resp, string(body), 400, wire.ErrBadRequest)
			default:
				if resp.StatusCode != 200 || err == nil || len(body) > len(part) {
					t.Errorf("status %d, %d bytes, %v; want 200 and a read error", resp.StatusCode, len(body), err)
				}
			}
			h.waitState("a new idle worker", func(st pool.Status, ready bool) bool { return st.Idle == 1 })
			if got := counter(t, h.wd.m.Restarts, tc.reason); got != 1 {
				t.Errorf(`restarts_total{reason=%q} = %v; want 1`, tc.reason, got)
			}
		})
	}
}

// TestSplicedClientNotReading: §10.2 — a client that reads nothing of a
// response larger than every buffer on the way holds the exchange only until
// exec_timeout + write_timeout; the worker, past its deadline, is replaced.
func TestSplicedClientNotReading(t *testing.T) {
	t.Parallel()
	h := start(t, func(c *config.Config) {
		c.ExecTimeout = 2 * time.Second // time for the head to go out first
		c.WriteTimeout = 300 * time.Millisecond
	})
	payload := testworker.Patterned(exchange.SpliceBodyMin)
	bc := h.sendBig(bigHead("/big?n=30000000", len(payload), "X-Request-Id: stalled"), payload, false)
	if err := <-bc.sent; err != nil {
		t.Fatal(err)
	}
	h.logs.waitContains(t, "id=stalled method=POST path=/big status=200")
	h.waitState("a new idle worker", func(st pool.Status, ready bool) bool { return st.Idle == 1 })
	if got := counter(t, h.wd.m.Restarts, "timeout"); got != 1 {
		t.Errorf(`restarts_total{reason="timeout"} = %v; want 1`, got)
	}
}

// TestSplicedClientGone: §6.4 — a client that leaves mid-upload has the
// worker replaced (request_aborted), and nothing of its exchange stays open
// in the watchdog: neither the connection nor the splice pipes. Not
// parallel: it counts the process's descriptors.
func TestSplicedClientGone(t *testing.T) {
	h := start(t, nil)
	n := 4 << 20
	part := testworker.Patterned(n)[:1<<20]
	abandon := func(i int) {
		id := "gone-" + strconv.Itoa(i)
		bc := h.sendBig(bigHead("/headers", n, "X-Request-Id: "+id), part, false)
		if err := <-bc.sent; err != nil {
			t.Fatal(err)
		}
		h.waitState("busy", func(st pool.Status, ready bool) bool { return st.Busy == 1 })
		bc.c.Close()
		h.logs.waitContains(t, "id="+id+" method=POST path=/headers status=400")
		h.waitState("a new idle worker", func(st pool.Status, ready bool) bool { return st.Idle == 1 })
	}
	openFDs := func() int {
		fds, err := os.ReadDir("/proc/self/fd")
		if err != nil {
			t.Fatal(err)
		}
		return len(fds)
	}
	abandon(0)
	// The garbage collector closes a lost *os.File or net.Conn: a leak
	// shows only while it does not run.
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	before := openFDs()
	const rounds = 8
	for i := 1; i <= rounds; i++ {
		abandon(i)
	}
	if got := counter(t, h.wd.m.Restarts, "request_aborted"); got != rounds+1 {
		t.Errorf(`restarts_total{reason="request_aborted"} = %v; want %d`, got, rounds+1)
	}
	// Slack for the log pipes of the last worker replaced, which close as
	// their readers see EOF.
	if after := openFDs(); after > before+2 {
		t.Errorf("%d descriptors open after %d abandoned uploads; %d before", after, rounds, before)
	}
}

// TestSplicedResponseDuringShutdown: §9.4 — a spliced exchange whose
// response is written after shutdown began says Connection: close, as the
// front's and net/http's responses then do, and its connection ends after
// it: the client must not send another request on it.
func TestSplicedResponseDuringShutdown(t *testing.T) {
	t.Parallel()
	h := start(t, nil)
	payload := testworker.Patterned(2 << 20)
	c, err := net.Dial("tcp", h.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(waitLimit))
	half := len(payload) / 2
	if _, err := c.Write(append([]byte(bigHead("/digest", len(payload))), payload[:half]...)); err != nil {
		t.Fatal(err)
	}
	h.waitState("the spliced request on a worker", func(st pool.Status, ready bool) bool { return st.Busy == 1 })
	stopped := make(chan error, 1)
	go func() { stopped <- h.stop() }()
	h.logs.waitContains(t, "shutting down")
	if _, err := c.Write(payload[half:]); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, &http.Request{Method: "POST"})
	if err != nil {
		t.Fatalf("reading the response: %v", err)
	}
	body, err := io.ReadAll(resp.Body)
	sum := sha256.Sum256(payload)
	if err != nil || resp.StatusCode != 200 || string(body) != hex.EncodeToString(sum[:]) {
		t.Fatalf("status %d, body %q, %v; want 200 and the body's digest", resp.StatusCode, body, err)
	}
	if !resp.Close {
		t.Errorf("the response during shutdown has no Connection: close (header %v)", resp.Header)
	}
	if _, err := br.ReadByte(); err != io.EOF {
		t.Errorf("after the response: %v; want the connection closed", err)
	}
	if err := <-stopped; err != nil {
		t.Fatalf("serve returned %v", err)
	}
}
