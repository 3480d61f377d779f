package watchdog

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/afterburn-dev/afterburn/go/internal/watchdog/buffer"
	"github.com/afterburn-dev/afterburn/go/internal/watchdog/config"
	"github.com/afterburn-dev/afterburn/go/internal/watchdog/exchange"
	"github.com/afterburn-dev/afterburn/go/internal/watchdog/pool"
	"github.com/afterburn-dev/afterburn/go/internal/watchdog/wire"
)

// TestWorkerCrash: §8.4 — 502 before the head, an aborted response after it
// (§8.7); only that request is affected.
func TestWorkerCrash(t *testing.T) {
	t.Parallel()
	h := start(t, nil)
	_, pid1 := h.Get("/pid")
	resp, body := h.Get("/crash")
	wantError(t, resp, body, 502, wire.ErrWorkerCrashed)
	resp, pid2 := h.Get("/pid")
	if resp.StatusCode != 200 || pid2 == pid1 {
		t.Fatalf("after the crash: %d pid %s (was %s)", resp.StatusCode, pid2, pid1)
	}
	if got := counter(t, h.wd.m.Restarts, "crashed"); got != 1 {
		t.Errorf(`restarts_total{reason="crashed"} = %v; want 1`, got)
	}

	// After the head: the client sees a truncated chunked body.
	r, err := h.client.Get(h.url + "/crash-mid")
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(r.Body)
	r.Body.Close()
	if r.StatusCode != 200 || err == nil {
		t.Fatalf("crash after the head: status %d, body %q, err %v; want 200 and a read error", r.StatusCode, b, err)
	}
	resp, body = h.Get("/x")
	wantBody(t, resp, body, 200, "ok GET /x")
	if got := counter(t, h.wd.m.Restarts, "crashed"); got != 2 {
		t.Errorf(`restarts_total{reason="crashed"} = %v; want 2`, got)
	}
}

// TestExecTimeout: §5.2, §8.6 — 504, the worker killed after cancel_grace,
// and the next request gets its own response, never the stale one.
func TestExecTimeout(t *testing.T) {
	t.Parallel()
	h := start(t, func(c *config.Config) { c.ExecTimeout = 300 * time.Millisecond; c.CancelGrace = 100 * time.Millisecond })
	began := time.Now()
	resp, body := h.Get("/sleep?ms=3000")
	wantError(t, resp, body, 504, wire.ErrTimeout)
	if d := time.Since(began); d > 2*time.Second {
		t.Errorf("504 after %v; want about 300ms", d)
	}
	resp, body = h.Get("/sleep?ms=0")
	wantBody(t, resp, body, 200, "slept 0")
	if got := counter(t, h.wd.m.Restarts, "timeout"); got != 1 {
		t.Errorf(`restarts_total{reason="timeout"} = %v; want 1`, got)
	}
	// The deadline passes while the client still sends the body: 504, not
	// a body error.
	bodyR, bodyW := io.Pipe()
	defer bodyW.Close()
	req, _ := http.NewRequest("POST", h.url+"/sleep?ms=3000", bodyR)
	go io.WriteString(bodyW, "part of a body")
	resp, body = h.do(req)
	wantError(t, resp, body, 504, wire.ErrTimeout)

	// A stream that stops mid-body: the response is aborted (§8.7).
	pr, pw := io.Pipe()
	defer pw.Close()
	req, _ = http.NewRequest("POST", h.url+"/stream", pr)
	r, err := h.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(r.Body)
	if err == nil {
		t.Errorf("stream past the deadline ended cleanly with %q; want an aborted response", b)
	}
	r.Body.Close()
}

// TestBadResponses: §4.4, §8.5 — malformed, close-delimited and 1xx
// responses are 502 bad_response and the worker is replaced.
func TestBadResponses(t *testing.T) {
	t.Parallel()
	h := start(t, nil)
	for i, path := range []string{"/garbage", "/unframed", "/continue"} {
		resp, body := h.Get(path)
		wantError(t, resp, body, 502, wire.ErrBadResponse)
		resp, body = h.Get("/after")
		wantBody(t, resp, body, 200, "ok GET /after")
		if got := counter(t, h.wd.m.ProtocolErrors, "bad_response"); got != float64(i+1) {
			t.Errorf("%s: protocol_errors_total{kind=bad_response} = %v; want %d", path, got, i+1)
		}
		if got := counter(t, h.wd.m.Restarts, "bad_response"); got != float64(i+1) {
			t.Errorf("%s: restarts_total{reason=bad_response} = %v; want %d", path, got, i+1)
		}
	}
}

// TestUnsolicitedOutput: §9.6 — bytes after a response replace the worker
// and never reach another request.
func TestUnsolicitedOutput(t *testing.T) {
	t.Parallel()
	h := start(t, nil)
	_, pid1 := h.Get("/pid")
	resp, body := h.Get("/unsolicited")
	wantBody(t, resp, body, 200, "first")
	resp, pid2 := h.Get("/pid")
	if resp.StatusCode != 200 || pid2 == pid1 || strings.Contains(pid2, "stale") {
		t.Fatalf("after unsolicited output: %d %q (first worker %s)", resp.StatusCode, pid2, pid1)
	}
	if got := counter(t, h.wd.m.Restarts, "unsolicited_output"); got != 1 {
		t.Errorf(`restarts_total{reason="unsolicited_output"} = %v; want 1`, got)
	}
	if got := counter(t, h.wd.m.ProtocolErrors, "unsolicited_output"); got != 1 {
		t.Errorf(`protocol_errors_total{kind="unsolicited_output"} = %v; want 1`, got)
	}
}

// TestWorkerReplaced: §4.4 Connection: close and §9.3 an idle exit.
func TestWorkerReplaced(t *testing.T) {
	t.Parallel()
	h := start(t, nil)
	for _, tc := range []struct{ path, body, reason string }{
		{"/close", "closing", "worker_closed"},
		{"/exit-after", "bye", "exited"},
	} {
		_, pid1 := h.Get("/pid")
		resp, body := h.Get(tc.path)
		wantBody(t, resp, body, 200, tc.body)
		if resp.Close && tc.reason == "worker_closed" {
			t.Errorf("the worker's Connection: close reached the client")
		}
		// An idle worker's exit races with the next dispatch; the log line
		// is the watchdog's own signal that it noticed.
		h.logs.waitContains(t, "replaced: "+tc.reason)
		_, pid2 := h.Get("/pid")
		if pid1 == pid2 {
			t.Errorf("%s: worker %s not replaced", tc.path, pid1)
		}
		if got := counter(t, h.wd.m.Restarts, tc.reason); got != 1 {
			t.Errorf("restarts_total{reason=%q} = %v; want 1", tc.reason, got)
		}
	}
}

// TestUnreadRequestRetried: §9.3 — a worker that exits without reading a byte
// of a request never ran a handler for it, so the request goes to another
// worker, its body replayed, and succeeds; a body too large to be held back
// is not retried.
func TestUnreadRequestRetried(t *testing.T) {
	t.Parallel()
	h := start(t, nil)
	resp, body := h.Get("/exit-later")
	wantBody(t, resp, body, 200, "bye")
	// Dispatched while the worker lives, so the pre-dispatch check passes;
	// the worker exits with the request unread in its pipe.
	resp, body = h.Get("/x")
	wantBody(t, resp, body, 200, "ok GET /x")
	h.logs.waitContains(t, "exited before reading request")
	if got := counter(t, h.wd.m.Restarts, "crashed"); got != 1 {
		t.Errorf(`restarts_total{reason="crashed"} = %v; want 1`, got)
	}

	resp, body = h.Get("/exit-later")
	wantBody(t, resp, body, 200, "bye")
	resp, body = h.post("/echo", "payload")
	wantBody(t, resp, body, 200, "payload")

	// Chunked: no Content-Length, so the watchdog frames it itself.
	resp, body = h.Get("/exit-later")
	wantBody(t, resp, body, 200, "bye")
	req, _ := http.NewRequest("POST", h.url+"/echo", io.MultiReader(strings.NewReader("first "), strings.NewReader("second")))
	resp, body = h.do(req)
	wantBody(t, resp, body, 200, "first second")
	if req.ContentLength != 0 || len(req.TransferEncoding) != 0 {
		t.Fatalf("the client framed the body itself: %d %v", req.ContentLength, req.TransferEncoding)
	}

	resp, body = h.Get("/exit-later")
	wantBody(t, resp, body, 200, "bye")
	resp, body = h.post("/echo", strings.Repeat("x", exchange.ReplayMax+1))
	wantError(t, resp, body, 502, wire.ErrWorkerCrashed)
}

// TestCrashWhileReadingHead: §8.4, §9.3 — a worker that dies having read
// part of a request's head fails that request with 502 worker_crashed (it
// may have started on it, so it is not sent elsewhere), is replaced, and the
// next request succeeds.
func TestCrashWhileReadingHead(t *testing.T) {
	t.Parallel()
	h := start(t, nil)
	resp, body := h.Get("/crash-next-head")
	wantBody(t, resp, body, 200, "armed")
	resp, body = h.Get("/victim")
	wantError(t, resp, body, 502, wire.ErrWorkerCrashed)
	// Served by the replacement, which starts after the restart is counted.
	resp, body = h.Get("/after")
	wantBody(t, resp, body, 200, "ok GET /after")
	if got := counter(t, h.wd.m.Restarts, "crashed"); got != 1 {
		t.Errorf(`restarts_total{reason="crashed"} = %v; want 1`, got)
	}
	if strings.Contains(h.logs.String(), "exited before reading request") {
		t.Errorf("a request the worker had started reading was sent to another worker")
	}
}

// TestCrashLoop: §9.1, §9.2 — init failures back off, three make the slot
// crash-looping, readiness fails, requests get 503 at once; a handshake
// recovers.
func TestCrashLoop(t *testing.T) {
	t.Parallel()
	marker := filepath.Join(t.TempDir(), "fail")
	os.WriteFile(marker, nil, 0o600)
	h := start(t, nil, "AFTERBURN_TEST_INIT=fail-while-marker", "AFTERBURN_TEST_MARKER="+marker)
	h.waitState("crash-looping", func(st pool.Status, ready bool) bool { return st.CrashLooping == 1 })
	resp, body := h.Get("/_/ready")
	if resp.StatusCode != 503 || !strings.Contains(body, `"crash_looping":1`) {
		t.Errorf("/_/ready: %d %s; want 503 with crash_looping 1", resp.StatusCode, body)
	}
	resp, body = h.Get("/x")
	wantError(t, resp, body, 503, wire.ErrUnavailable)
	h.logs.waitContains(t, "w1 stderr: child: init failed: marker present")
	h.logs.waitContains(t, "w1 is crash-looping")
	if got := counter(t, h.wd.m.Restarts, "init_failed"); got < 3 {
		t.Errorf(`restarts_total{reason="init_failed"} = %v; want >= 3`, got)
	}

	os.Remove(marker)
	h.waitState("ready", func(st pool.Status, ready bool) bool { return ready })
	resp, body = h.Get("/x")
	wantBody(t, resp, body, 200, "ok GET /x")
	if resp, _ := h.Get("/_/ready"); resp.StatusCode != 200 {
		t.Errorf("/_/ready after recovery: %d", resp.StatusCode)
	}
}

// TestInitTimeout: §3.5 — a worker that never answers is killed.
func TestInitTimeout(t *testing.T) {
	t.Parallel()
	h := start(t, func(c *config.Config) { c.InitTimeout = 200 * time.Millisecond }, "AFTERBURN_TEST_INIT=hang")
	h.waitState("backoff", func(st pool.Status, ready bool) bool { return st.Backoff == 1 })
	h.logs.waitContains(t, "w1 init_timeout: no handshake reply before init_timeout")
	if got := counter(t, h.wd.m.Restarts, "init_timeout"); got < 1 {
		t.Errorf(`restarts_total{reason="init_timeout"} = %v; want >= 1`, got)
	}
}

// TestVersionMismatch: §3.4 — both lists logged, a failed handshake.
func TestVersionMismatch(t *testing.T) {
	t.Parallel()
	h := start(t, nil, "AFTERBURN_TEST_INIT=bad-version")
	h.logs.waitContains(t, `version mismatch: watchdog offers "1", library speaks "7"`)
	if got := counter(t, h.wd.m.ProtocolErrors, "handshake"); got < 1 {
		t.Errorf(`protocol_errors_total{kind="handshake"} = %v; want >= 1`, got)
	}
}

// TestQueueDeadline: §5.2, §10.3 — a request whose deadline passes in the
// queue is answered 504 without a worker.
func TestQueueDeadline(t *testing.T) {
	t.Parallel()
	h := start(t, func(c *config.Config) { c.ExecTimeout = 300 * time.Millisecond }, "AFTERBURN_TEST_INIT=hang")
	resp, body := h.Get("/x")
	wantError(t, resp, body, 504, wire.ErrTimeout)
	h.logs.waitContains(t, "path=/x status=504")
	if line := h.logs.waitContains(t, "path=/x status=504"); !strings.HasSuffix(line, "worker=-") {
		t.Errorf("access log %q; want no worker", line)
	}
}

// TestLimits: §7.1 431, §7.2 413 by Content-Length (no worker) and by a
// chunked body crossing the limit (request_aborted).
func TestLimits(t *testing.T) {
	t.Parallel()
	h := start(t, func(c *config.Config) {
		c.MaxRequestBody = 1000
		c.MaxHeaderBytes = 1024
	})
	resp, body := h.post("/headers?cl", strings.Repeat("x", 1001))
	wantError(t, resp, body, 413, wire.ErrBodyTooLarge)
	if line := h.logs.waitContains(t, "path=/headers status=413"); !strings.HasSuffix(line, "worker=-") {
		t.Errorf("access log %q; want no worker", line)
	}
	// A client that announces a large body but waits before sending it (as
	// many do) gets the 413 at once, on a connection that closes.
	// Without that the server would first wait read_timeout (10 s) for the
	// body, so a reply within half of it shows the 413 did not wait.
	c, err := net.Dial("tcp", h.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	io.WriteString(c, "POST /headers HTTP/1.1\r\nHost: fn\r\nContent-Length: 5000\r\n\r\n")
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	resp, err = http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("413 before the body was sent: %v", err)
	}
	if resp.StatusCode != 413 || !resp.Close {
		t.Errorf("got %d, close=%v; want 413 on a closing connection", resp.StatusCode, resp.Close)
	}
	resp, body = h.post("/echo", strings.Repeat("x", 1000))
	if resp.StatusCode != 200 || len(body) != 1000 {
		t.Errorf("body at the limit: %d, %d bytes", resp.StatusCode, len(body))
	}

	req, _ := http.NewRequest("POST", h.url+"/headers?chunked", io.MultiReader(strings.NewReader(strings.Repeat("x", 3000))))
	resp, body = h.do(req)
	wantError(t, resp, body, 413, wire.ErrBodyTooLarge)

	req, _ = http.NewRequest("GET", h.url+"/x", nil)
	req.Header.Set("X-Big", strings.Repeat("b", 1100))
	resp, body = h.do(req)
	wantError(t, resp, body, 431, wire.ErrHeadersTooLarge)
	// A chunked request's Trailer field is a field line too, though net/http
	// takes it out of the header: 80 names, about 1300 bytes.
	req, _ = http.NewRequest("POST", h.url+"/x", strings.NewReader("b"))
	req.ContentLength, req.Trailer = -1, http.Header{}
	for i := range 80 {
		req.Trailer[fmt.Sprintf("X-Trailer-%03d", i)] = nil
	}
	resp, body = h.do(req)
	wantError(t, resp, body, 431, wire.ErrHeadersTooLarge)

	resp, body = h.Get("/x") // served by the replacement, started after the count
	wantBody(t, resp, body, 200, "ok GET /x")
	if got := counter(t, h.wd.m.Restarts, "request_aborted"); got != 1 {
		t.Errorf(`restarts_total{reason="request_aborted"} = %v; want 1`, got)
	}
}

// holdWorker starts a lockstep stream and returns once the worker is busy
// with it; closing the returned writer ends it.
func holdWorker(t *testing.T, h *harness) (io.WriteCloser, func()) {
	t.Helper()
	pr, pw := io.Pipe()
	req, _ := http.NewRequest("POST", h.url+"/stream", pr)
	resp, err := h.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(pw, "hold\n")
	br := bufio.NewReader(resp.Body)
	if line, err := br.ReadString('\n'); err != nil || line != "data: hold\n" {
		t.Fatalf("holding stream: %q %v", line, err)
	}
	return pw, func() {
		pw.Close()
		io.Copy(io.Discard, br)
		resp.Body.Close()
	}
}

// TestOverload: §10.3 — over max_inflight a request gets 429 at once.
func TestOverload(t *testing.T) {
	t.Parallel()
	h := start(t, func(c *config.Config) { c.MaxInflight = 1 })
	_, done := holdWorker(t, h)
	resp, body := h.Get("/x")
	wantError(t, resp, body, 429, wire.ErrOverloaded)
	done()
	resp, body = h.Get("/x")
	wantBody(t, resp, body, 200, "ok GET /x")
}

// TestQueueFIFO: §2.1, §10.3 — a request that finds every worker busy waits.
func TestQueueFIFO(t *testing.T) {
	t.Parallel()
	h := start(t, nil)
	_, done := holdWorker(t, h)
	got := h.getLater("/queued")
	h.waitQueued(1)
	done()
	if b := <-got; b != "200 ok GET /queued" {
		t.Fatalf("queued request got %q", b)
	}
}

// TestQueuedClientLeaves: §10.6, §10.3 — a client that leaves while its
// request waits in the queue is noticed: the request leaves the queue while
// the worker is still held, is logged 499, and no worker ever sees it.
func TestQueuedClientLeaves(t *testing.T) {
	t.Parallel()
	h := start(t, nil)
	_, done := holdWorker(t, h)
	c, err := net.Dial("tcp", h.addr)
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(c, "GET /left-the-queue HTTP/1.1\r\nHost: x\r\n\r\n")
	h.waitQueued(1)
	c.Close()
	h.waitQueued(0) // the worker is still held: only the client's leaving empties the queue
	h.logs.waitContains(t, "499")
	done()
	resp, body := h.Get("/x")
	wantBody(t, resp, body, 200, "ok GET /x")
	if got := h.logs.String(); strings.Contains(got, "ok GET /left-the-queue") || !strings.Contains(got, "/left-the-queue") {
		t.Fatalf("the abandoned request reached a worker, or went unlogged:\n%s", got)
	}
}

// TestClientGoneMidBody: §6.4 — the worker is replaced (request_aborted)
// and the next request is fine.
func TestClientGoneMidBody(t *testing.T) {
	t.Parallel()
	h := start(t, nil)
	c, err := net.Dial("tcp", h.addr)
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(c, "POST /headers HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\nonly a part")
	h.waitState("busy", func(st pool.Status, ready bool) bool { return st.Busy == 1 })
	c.Close()
	h.logs.waitContains(t, "could not be completed")
	resp, body := h.Get("/x")
	wantBody(t, resp, body, 200, "ok GET /x")
	if got := counter(t, h.wd.m.Restarts, "request_aborted"); got != 1 {
		t.Errorf(`restarts_total{reason="request_aborted"} = %v; want 1`, got)
	}
}

// TestSmallBodyWithItsHead: §6.1 — a body announced by Content-Length of at
// most inlineBodyMax bytes reaches the worker in the same write as its head;
// a larger one still streams, whole and in order.
func TestSmallBodyWithItsHead(t *testing.T) {
	t.Parallel()
	h := start(t, nil)
	for _, n := range []int{1, 1000, 3000} { // the child reads 4 KiB at a time
		// The body comes 100 ms after the head: a watchdog that wrote the
		// head at once would have the child parse it with nothing after it.
		c, err := net.Dial("tcp", h.addr)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(c, "POST /buffered HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n", n)
		time.Sleep(100 * time.Millisecond)
		io.WriteString(c, strings.Repeat("b", n))
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatalf("reading the response: %v", err)
		}
		body, _ := io.ReadAll(resp.Body)
		c.Close()
		wantBody(t, resp, string(body), 200, strconv.Itoa(n))
	}
	big := strings.Repeat("0123456789abcdef", buffer.InlineBodyMax/16*3)
	resp, body := h.post("/echo", big)
	if resp.StatusCode != 200 || body != big {
		t.Fatalf("a %d-byte echo came back %d with %d bytes", len(big), resp.StatusCode, len(body))
	}
}

// TestSmallBodyNeverDelivered: §6.1, §6.4 — a client that leaves before the
// whole of a small body arrived costs no worker: nothing of the request was
// written to it.
func TestSmallBodyNeverDelivered(t *testing.T) {
	t.Parallel()
	h := start(t, nil)
	_, pid := h.Get("/pid")
	c, err := net.Dial("tcp", h.addr)
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(c, "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\nonly a part")
	h.waitState("busy", func(st pool.Status, ready bool) bool { return st.Busy == 1 })
	c.Close()
	h.logs.waitContains(t, "the client did not deliver the 100-byte body of request")
	resp, body := h.Get("/pid")
	wantBody(t, resp, body, 200, pid) // the same worker
	for _, reason := range []string{"request_aborted", "crashed"} {
		if got := counter(t, h.wd.m.Restarts, reason); got != 0 {
			t.Errorf(`restarts_total{reason=%q} = %v; want 0`, reason, got)
		}
	}
}

// TestSmallBodyStallsPastDeadline: §5.2, §6.1 — waiting for a small body is
// held to the request's deadline: 504 timeout at the deadline, the
// connection closed, and the worker, which saw nothing, kept.
func TestSmallBodyStallsPastDeadline(t *testing.T) {
	t.Parallel()
	const execTimeout = 400 * time.Millisecond
	h := start(t, func(c *config.Config) { c.ExecTimeout = execTimeout })
	c, err := net.Dial("tcp", h.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	started := time.Now()
	io.WriteString(c, "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\nonly a part")
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("reading the response: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	if took := time.Since(started); took < execTimeout*9/10 || took > 4*time.Second {
		t.Errorf("answered after %v; want about exec_timeout (%v)", took, execTimeout)
	}
	wantError(t, resp, string(body), 504, wire.ErrTimeout)
	if !resp.Close {
		t.Errorf("the connection was left open after a body that never came")
	}
	resp2, body2 := h.Get("/x")
	wantBody(t, resp2, body2, 200, "ok GET /x")
	for _, reason := range []string{"request_aborted", "timeout"} {
		if got := counter(t, h.wd.m.Restarts, reason); got != 0 {
			t.Errorf(`restarts_total{reason=%q} = %v; want 0`, reason, got)
		}
	}
}

// TestGracefulShutdown: §9.4 — an in-flight request finishes, workers see
// EOF and exit 0, serve returns nil.
func TestGracefulShutdown(t *testing.T) {
	t.Parallel()
	h := start(t, func(c *config.Config) { c.Workers = 2 })
	h.waitState("two idle workers", func(st pool.Status, ready bool) bool { return st.Idle == 2 })
	pw, done := holdWorker(t, h)
	stopped := make(chan error, 1)
	go func() { stopped <- h.stop() }()
	h.logs.waitContains(t, "shutting down")
	if resp, err := http.Get(h.url + "/x"); err == nil {
		resp.Body.Close()
		t.Errorf("a new connection was accepted during shutdown")
	}
	if _, err := io.WriteString(pw, "still here\n"); err != nil {
		t.Fatal(err)
	}
	done()
	if err := <-stopped; err != nil {
		t.Fatalf("serve returned %v", err)
	}
	for _, w := range []string{"w1", "w2"} {
		h.logs.waitFor(t, w+" stopped: exit status 0", func(l string) bool {
			return strings.Contains(l, w+" pid ") && strings.HasSuffix(l, "stopped: exit status 0")
		})
	}
	if !strings.Contains(h.logs.String(), "method=POST path=/stream status=200") {
		t.Errorf("the in-flight request did not finish with 200")
	}
}

// TestShutdownKillsStragglers: §9.4 — past shutdown_timeout workers are
// killed.
func TestShutdownKillsStragglers(t *testing.T) {
	t.Parallel()
	h := start(t, func(c *config.Config) {
		c.ShutdownTimeout = 200 * time.Millisecond
		c.ExecTimeout = 0
	})
	go h.client.Get(h.url + "/hang")
	h.waitState("busy", func(st pool.Status, ready bool) bool { return st.Busy == 1 })
	if err := h.stop(); err != nil {
		t.Fatal(err)
	}
	h.logs.waitContains(t, "still running after shutdown_timeout: killing it")
}

// TestShutdownAnswersCutRequests: §9.4 — at the end of shutdown_timeout a
// request in flight whose response head was not sent, and one queued behind
// it, are answered 503 unavailable with Connection: close rather than cut
// off bare; one whose head went out is aborted (§8.7); serve returns nil.
func TestShutdownAnswersCutRequests(t *testing.T) {
	t.Parallel()
	const grace = 300 * time.Millisecond
	h := start(t, func(c *config.Config) {
		c.Workers = 2
		c.ShutdownTimeout = grace
		c.ExecTimeout = 0
	})
	h.waitState("two idle workers", func(st pool.Status, ready bool) bool { return st.Idle == 2 })

	// A stream whose head went out, the worker waiting for more body.
	pr, pw := io.Pipe()
	defer pw.Close()
	req, _ := http.NewRequest("POST", h.url+"/stream", pr)
	resp, err := h.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(pw, "hold\n")
	stream := bufio.NewReader(resp.Body)
	if line, err := stream.ReadString('\n'); err != nil || line != "data: hold\n" {
		t.Fatalf("holding stream: %q %v", line, err)
	}

	type result struct {
		resp *http.Response
		body string
		err  error
	}
	send := func(path string) <-chan result {
		ch := make(chan result, 1)
		go func() {
			resp, err := h.client.Get(h.url + path)
			if err != nil {
				ch <- result{err: err}
				return
			}
			b, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			ch <- result{resp, string(b), err}
		}()
		return ch
	}
	hung := send("/hang")
	h.waitState("two busy workers", func(st pool.Status, ready bool) bool { return st.Busy == 2 })
	queued := send("/queued")
	h.waitQueued(1)

	stopping := time.Now()
	stopped := make(chan error, 1)
	go func() { stopped <- h.stop() }()
	for _, tc := range []struct {
		what string
		ch   <-chan result
	}{{"in flight, no head sent", hung}, {"queued", queued}} {
		r := <-tc.ch
		if r.err != nil {
			t.Errorf("%s at the end of shutdown_timeout: %v; want 503 unavailable", tc.what, r.err)
			continue
		}
		wantError(t, r.resp, r.body, 503, wire.ErrUnavailable)
		if !r.resp.Close {
			t.Errorf("%s: the 503 has no Connection: close", tc.what)
		}
		if took := time.Since(stopping); took < grace*9/10 {
			t.Errorf("%s: answered %v after shutdown began; want shutdown_timeout (%v)", tc.what, took, grace)
		}
	}
	if _, err := io.ReadAll(stream); err == nil {
		t.Errorf("the stream whose head went out ended cleanly; want it visibly incomplete (§8.7)")
	}
	resp.Body.Close()
	if err := <-stopped; err != nil {
		t.Fatalf("serve returned %v", err)
	}
	h.logs.waitContains(t, "cut short at the end of shutdown_timeout")
	for _, reason := range []string{"crashed", "timeout"} {
		if n := counter(t, h.wd.m.Restarts, reason); n != 0 {
			t.Errorf("restarts{reason=%q} = %v; want 0: nothing is restarted at shutdown", reason, n)
		}
	}
}

// TestClientGoneMidResponse: PROTOCOL.md §6.5 — a client that leaves while
// its response is being forwarded costs no worker: the watchdog reads the
// response to its end, discarding it, and the same worker serves on.
func TestClientGoneMidResponse(t *testing.T) {
	t.Parallel()
	h := start(t, nil) // one worker
	_, pid := h.Get("/pid")

	c, err := net.Dial("tcp", h.addr)
	if err != nil {
		t.Fatal(err)
	}
	// 8 MiB: far more than the socket and pipe buffers hold, so the worker
	// is still writing when the client goes.
	io.WriteString(c, "GET /big?n=8388608 HTTP/1.1\r\nHost: fn\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(resp.Body, make([]byte, 4096)); err != nil {
		t.Fatal(err)
	}
	c.Close()

	h.logs.waitContains(t, "path=/big status=200")
	if _, again := h.Get("/pid"); again != pid {
		t.Errorf("after the client left mid-response the next request ran on pid %s; want the same worker %s", again, pid)
	}
	for _, reason := range []string{"crashed", "timeout", "bad_response", "request_aborted"} {
		if n := counter(t, h.wd.m.Restarts, reason); n != 0 {
			t.Errorf("restarts{reason=%q} = %v; want 0", reason, n)
		}
	}
}
