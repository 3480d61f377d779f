package watchdog

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/afterburn-dev/afterburn/go/internal/watchdog/buffer"
	"github.com/afterburn-dev/afterburn/go/internal/watchdog/config"
	"github.com/afterburn-dev/afterburn/go/internal/watchdog/internal/testworker"
	"github.com/afterburn-dev/afterburn/go/internal/watchdog/pool"
)

// slowClient sends request on a connection of its own with a small receive
// buffer, and reads nothing of the response until told: a client that does
// not read.
func (h *harness) slowClient(request string) net.Conn {
	h.t.Helper()
	// SetReadBuffer before the connection is made: shrunk after, the buffer
	// drops what the window it advertised already let through, and the
	// retransmissions back off for seconds.
	d := net.Dialer{Control: func(network, address string, rc syscall.RawConn) error {
		var err error
		rc.Control(func(fd uintptr) {
			err = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096)
		})
		return err
	}}
	c, err := d.Dial("tcp", h.addr)
	if err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() { c.Close() })
	if _, err := io.WriteString(c, request); err != nil {
		h.t.Fatal(err)
	}
	return c
}

// readPattern reads the response to /pattern?n=n on c, at last, and checks
// that it is 200 with testworker.Patterned(n), and the X-Length trailer when chunked.
func readPattern(t *testing.T, c net.Conn, n int, chunked bool) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(waitLimit))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("reading the response head: %v", err)
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading the body: %v after %d bytes of %d", err, len(body), n)
	}
	if want := testworker.Patterned(n); resp.StatusCode != 200 || !bytes.Equal(body, want) {
		t.Fatalf("got %d with %d bytes, first difference at %d; want 200 with the %d bytes of the pattern",
			resp.StatusCode, len(body), firstDifference(body, want), n)
	}
	if got := resp.Trailer.Get("X-Length"); chunked && got != strconv.Itoa(n) {
		t.Errorf("trailer X-Length %q; want %d", got, n)
	}
}

func firstDifference(a, b []byte) int {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	return i
}

// The tests of buffered responses move several MiB each through a watchdog
// and a worker of their own. They run one after the other (their subtests
// side by side), before the parallel tests: on a small machine they would
// slow down those that count events in a burst (TestRecycleUnderLoad).

// wantBuffersEmpty checks that no response buffer holds anything: call it
// once the access log line of the last buffered response was written.
func wantBuffersEmpty(t *testing.T, h *harness) {
	t.Helper()
	for _, where := range []string{"memory", "file"} {
		if got := h.wd.buffers.HeldBytes(where); got != 0 {
			t.Errorf(`afterburn_response_buffer_bytes{where=%q} = %d after the response; want 0`, where, got)
		}
	}
}

// TestBufferedSlowClientFreesWorker: PROTOCOL.md §6.1 — a client that does
// not read an 8 MiB response does not hold the worker: with one worker,
// another request is answered meanwhile, and the response still arrives
// whole when the client reads it.
func TestBufferedSlowClientFreesWorker(t *testing.T) {
	h := start(t, nil) // one worker
	_, pid := h.Get("/pid")
	const n = 8 << 20
	c := h.slowClient("GET /pattern?n=8388608 HTTP/1.1\r\nHost: fn\r\n\r\n")
	h.waitState("the slow client's request on the worker", func(st pool.Status, ready bool) bool { return st.Busy == 1 })
	resp, body := h.Get("/pid")
	wantBody(t, resp, body, 200, pid)
	if held := h.wd.buffers.HeldBytes("memory") + h.wd.buffers.HeldBytes("file"); held == 0 {
		t.Errorf("nothing is held in response buffers while the client reads nothing of %d bytes", n)
	}
	readPattern(t, c, n, false)
	h.logs.waitContains(t, "path=/pattern status=200")
	wantBuffersEmpty(t, h)
}

// TestBufferedSpill: §6.1 — what passes response_buffer_memory goes to a
// temporary file, the worker is released once the whole body is read, and
// the body arrives intact, with its trailers (§4.4).
func TestBufferedSpill(t *testing.T) {
	const memory = 64 << 10
	for _, chunked := range []bool{false, true} {
		t.Run("chunked="+strconv.FormatBool(chunked), func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			h := start(t, func(c *config.Config) { c.ResponseBufferMemory, c.BufferDir = memory, dir })
			const n = 8 << 20
			target := "/pattern?n=8388608"
			if chunked {
				target += "&chunked=1"
			}
			c := h.slowClient("GET " + target + " HTTP/1.1\r\nHost: fn\r\n\r\n")
			h.waitState("busy", func(st pool.Status, ready bool) bool { return st.Busy == 1 })
			h.waitState("the worker released", func(st pool.Status, ready bool) bool { return st.Idle == 1 })
			file, mem := h.wd.buffers.HeldBytes("file"), h.wd.buffers.HeldBytes("memory")
			if file == 0 || mem > memory {
				t.Errorf("with the worker released and the client reading nothing: %d bytes in memory, %d in a file; want at most %d in memory and the rest in a file",
					mem, file, memory)
			}
			if names, err := os.ReadDir(dir); err != nil || len(names) != 0 {
				t.Errorf("buffer_dir holds %v (%v) while a response is spilled; want nothing: files are unlinked at once", names, err)
			}
			readPattern(t, c, n, chunked)
			h.logs.waitContains(t, "path=/pattern status=200")
			wantBuffersEmpty(t, h)
		})
	}
}

// TestBufferedBackPressure: §6.1 — with memory and buffer_spill_max both
// full, or memory full and no temporary file to be had, the watchdog stops
// reading the worker, which stays busy (as it does with response_buffering
// off), and the response is still whole when the client reads it at last;
// the request that waited for the worker is served after.
func TestBufferedBackPressure(t *testing.T) {
	const small = 64 << 10
	for _, tc := range []struct {
		name string
		mut  func(*config.Config)
		log  string // the watchdog's word that it waits, or why it will
	}{
		{"buffers full", func(c *config.Config) { c.ResponseBufferMemory, c.BufferSpillMax = small, small }, "waits for the client of request"},
		{"buffer_dir unusable", func(c *config.Config) {
			c.ResponseBufferMemory, c.BufferDir = small, filepath.Join(t.TempDir(), "missing")
		}, "responses will be buffered in memory only"},
		{"response_buffering off", func(c *config.Config) { c.ResponseBuffering = false }, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := start(t, tc.mut)
			_, pid := h.Get("/pid")
			const n = 8 << 20
			c := h.slowClient("GET /pattern?n=8388608 HTTP/1.1\r\nHost: fn\r\n\r\n")
			h.waitState("busy", func(st pool.Status, ready bool) bool { return st.Busy == 1 })
			if tc.log != "" {
				h.logs.waitContains(t, tc.log)
			}
			// The kernel may take more of the response into the socket's
			// send buffer as it grows, making room again for a while.
			if got := h.wd.buffers.HeldBytes("file"); got > h.wd.cfg.BufferSpillMax {
				t.Errorf(`afterburn_response_buffer_bytes{where="file"} = %d; want at most buffer_spill_max, %d`, got, h.wd.cfg.BufferSpillMax)
			}
			got := h.getLater("/pid")
			h.waitQueued(1) // the worker is held
			readPattern(t, c, n, false)
			if b := <-got; b != "200 "+pid {
				t.Errorf("the request queued meanwhile got %q; want 200 from the same worker, %s", b, pid)
			}
			for _, reason := range []string{"crashed", "timeout", "bad_response", "request_aborted"} {
				if n := counter(t, h.wd.m.Restarts, reason); n != 0 {
					t.Errorf("restarts{reason=%q} = %v; want 0", reason, n)
				}
			}
			wantBuffersEmpty(t, h)
		})
	}
}

// TestBufferedCrashMidBody: §8.7 — a worker that dies in the middle of a
// buffered body, while its client reads nothing yet: the client gets every
// byte read before the failure, then a response that is visibly incomplete.
func TestBufferedCrashMidBody(t *testing.T) {
	const n, k = 4 << 20, 1 << 20
	for _, chunked := range []bool{false, true} {
		t.Run("chunked="+strconv.FormatBool(chunked), func(t *testing.T) {
			t.Parallel()
			h := start(t, func(c *config.Config) { c.ResponseBufferMemory = 64 << 10 })
			target := "/pattern?n=4194304&crash=1048576"
			if chunked {
				target += "&chunked=1"
			}
			c := h.slowClient("GET " + target + " HTTP/1.1\r\nHost: fn\r\n\r\n")
			h.logs.waitContains(t, "exited or closed a pipe during request")
			c.SetReadDeadline(time.Now().Add(waitLimit))
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil {
				t.Fatalf("reading the response head: %v", err)
			}
			body, err := io.ReadAll(resp.Body)
			if err == nil {
				t.Errorf("the response ended cleanly after %d bytes; want it aborted (§8.7)", len(body))
			}
			if want := testworker.Patterned(n)[:k]; !bytes.Equal(body, want) {
				t.Errorf("got %d bytes before the abort, first difference at %d; want the %d bytes the worker wrote",
					len(body), firstDifference(body, want), k)
			}
			if got := counter(t, h.wd.m.Restarts, "crashed"); got != 1 {
				t.Errorf(`restarts_total{reason="crashed"} = %v; want 1`, got)
			}
			h.logs.waitContains(t, "path=/pattern status=200")
			wantBuffersEmpty(t, h)
		})
	}
}

// TestBufferedClientGone: §6.5 — a client that leaves while the watchdog
// waits for it with full buffers costs no worker: the watchdog reads the
// rest of the response, discarding it, and the same worker serves on.
func TestBufferedClientGone(t *testing.T) {
	h := start(t, func(c *config.Config) { c.ResponseBufferMemory, c.BufferSpillMax = 64<<10, 64<<10 })
	_, pid := h.Get("/pid")
	c := h.slowClient("GET /pattern?n=8388608 HTTP/1.1\r\nHost: fn\r\n\r\n")
	h.logs.waitContains(t, "waits for the client of request")
	c.Close()
	h.logs.waitContains(t, "path=/pattern status=200")
	resp, body := h.Get("/pid")
	wantBody(t, resp, body, 200, pid)
	for _, reason := range []string{"crashed", "timeout", "bad_response", "request_aborted"} {
		if n := counter(t, h.wd.m.Restarts, reason); n != 0 {
			t.Errorf("restarts{reason=%q} = %v; want 0", reason, n)
		}
	}
	wantBuffersEmpty(t, h)
}

// TestChunkedEndIn: a chunked body is copied without a buffer only when its
// end is already read.
func TestChunkedEndIn(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		want bool
	}{
		{"0\r\n\r\n", true},
		{"5\r\nhello\r\n0\r\n\r\n", true},
		{"5;ext=1\r\nhello\r\nA\r\n0123456789\r\n0\r\nX-T: 1\r\n\r\n", true},
		{"5\nhello\r\n0\n\n", true},
		{"", false},
		{"5\r\nhello\r\n", false},
		{"5\r\nhel", false},
		{"5\r\nhello\r\n0\r\n", false},
		{"5\r\nhello\r\n0\r\nX-T: 1\r\n", false},
		{"ffffffffffffffff\r\nx\r\n0\r\n\r\n", false},
		{"10000000000000000\r\n0\r\n\r\n", false},
		{"zz\r\n0\r\n\r\n", false},
	} {
		if got := buffer.ChunkedEndIn([]byte(tc.in)); got != tc.want {
			t.Errorf("chunkedEndIn(%q) = %v; want %v", tc.in, got, tc.want)
		}
	}
}

// TestBufferedDeadline: §5.2, §8.6, §8.7 — exec_timeout runs to the end of
// reading the response from the pipe: a worker held back by full buffers is
// killed after cancel_grace like any other, and the client, reading at last,
// gets the bytes read before it, intact, then an aborted response.
func TestBufferedDeadline(t *testing.T) {
	h := start(t, func(c *config.Config) {
		c.ResponseBufferMemory, c.BufferSpillMax = 64<<10, 64<<10
		c.ExecTimeout = 500 * time.Millisecond
		c.CancelGrace = 100 * time.Millisecond
		c.WriteTimeout = time.Minute // the client's side does not end it first
	})
	const n = 8 << 20
	c := h.slowClient("GET /pattern?n=8388608 HTTP/1.1\r\nHost: fn\r\n\r\n")
	h.logs.waitContains(t, "waits for the client of request")
	h.logs.waitContains(t, "passed the deadline of request")
	c.SetReadDeadline(time.Now().Add(waitLimit))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("reading the response head: %v", err)
	}
	body, err := io.ReadAll(resp.Body)
	if err == nil || len(body) >= n {
		t.Errorf("the response ended with %d of %d bytes and error %v; want it aborted (§8.7)", len(body), n, err)
	}
	if want := testworker.Patterned(n)[:len(body)]; !bytes.Equal(body, want) {
		t.Errorf("the %d bytes before the abort differ from the pattern at %d", len(body), firstDifference(body, want))
	}
	h.logs.waitContains(t, "replaced: timeout")
	if got := counter(t, h.wd.m.Restarts, "timeout"); got != 1 {
		t.Errorf(`restarts_total{reason="timeout"} = %v; want 1`, got)
	}
	resp2, body2 := h.Get("/x")
	wantBody(t, resp2, body2, 200, "ok GET /x")
	h.logs.waitContains(t, "path=/pattern status=200")
	wantBuffersEmpty(t, h)
}
