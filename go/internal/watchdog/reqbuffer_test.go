package watchdog

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/afterburn-dev/afterburn/go/internal/watchdog/config"
	"github.com/afterburn-dev/afterburn/go/internal/watchdog/exchange"
	dto "github.com/prometheus/client_model/go"
)

// buffering turns on request buffering (PROTOCOL.md §6.6) in a test config.
func buffering(mut func(*config.Config)) func(*config.Config) {
	return func(c *config.Config) {
		c.RequestBuffering = true
		c.BufferDir = os.TempDir()
		if mut != nil {
			mut(c)
		}
	}
}

// PROTOCOL.md §6.6: a client that stalls in the middle of a body of known
// length holds no worker, and when it gives up no worker is replaced.
func TestBufferedBodyHoldsNoWorker(t *testing.T) {
	t.Parallel()
	h := start(t, buffering(nil))
	c, err := net.Dial("tcp", h.addr)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(c, "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n0123456789")
	// The one worker serves other requests while that body is missing...
	for i := 0; i < 3; i++ {
		resp, body := h.Get("/meanwhile")
		wantBody(t, resp, body, 200, "ok GET /meanwhile")
	}
	// ...and nothing happens to it when the client leaves.
	c.Close()
	resp, body := h.Get("/after")
	wantBody(t, resp, body, 200, "ok GET /after")
	if got := counter(t, h.wd.m.Restarts, "request_aborted"); got != 0 {
		t.Errorf(`restarts_total{reason="request_aborted"} = %v; want 0`, got)
	}
}

// PROTOCOL.md §6.6: past request_buffer_memory a body goes to a temporary
// file, which is gone as soon as it was made, and arrives intact.
func TestBufferedBodySpillsToFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	h := start(t, buffering(func(c *config.Config) { c.RequestBufferMemory = 1024; c.BufferDir = dir }))
	payload := strings.Repeat("0123456789abcdef", 300<<10/16)
	resp, body := h.post("/digest", payload)
	sum := sha256.Sum256([]byte(payload))
	wantBody(t, resp, body, 200, hex.EncodeToString(sum[:]))
	if got := resp.Trailer.Get("X-Length"); got != fmt.Sprint(len(payload)) {
		t.Errorf("the worker read %s bytes; want %d", got, len(payload))
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Errorf("temporary files left in buffer_dir: %v", left)
	}
	for _, where := range []string{"memory", "file"} {
		if got := gaugeValue(t, h, where); got != 0 {
			t.Errorf("afterburn_request_buffer_bytes{where=%q} = %v after the request; want 0", where, got)
		}
	}
	if h.wd.spill.Used.Load() != 0 {
		t.Errorf("spill budget still holds %d bytes", h.wd.spill.Used.Load())
	}
}

func gaugeValue(t *testing.T, h *harness, where string) float64 {
	t.Helper()
	var m dto.Metric
	if err := h.wd.m.RequestBuffered.WithLabelValues(where).Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetGauge().GetValue()
}

// PROTOCOL.md §6.6: a body that would take the temporary files past
// buffer_spill_max, or that cannot go to buffer_dir, streams to its worker
// as without buffering: it is served, and the log says why once.
func TestBufferedBodySpillRefusedStreams(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		mut  func(*config.Config)
		why  string
	}{
		{"buffer_spill_max", func(c *config.Config) { c.BufferSpillMax = 1000 }, "buffer_spill_max reached"},
		{"buffer_dir", func(c *config.Config) { c.BufferDir = "/nonexistent/afterburn" }, "no such file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := start(t, buffering(func(c *config.Config) { c.RequestBufferMemory = 1024; tc.mut(c) }))
			for i := 0; i < 2; i++ {
				payload := strings.Repeat("y", 4096)
				resp, body := h.post("/digest", payload)
				sum := sha256.Sum256([]byte(payload))
				wantBody(t, resp, body, 200, hex.EncodeToString(sum[:]))
			}
			if n := strings.Count(h.logs.String(), "stream to their worker unbuffered"); n != 1 {
				t.Errorf("%d log lines about unbuffered bodies; want 1:\n%s", n, h.logs.String())
			}
			h.logs.waitContains(t, tc.why)
			payload := strings.Repeat("z", 2000) // 976 bytes spilled: within the cap
			resp, body := h.post("/digest", payload)
			sum := sha256.Sum256([]byte(payload))
			wantBody(t, resp, body, 200, hex.EncodeToString(sum[:]))
		})
	}
}

// PROTOCOL.md §6.6, §9.3: a buffered body of any size is sent again to
// another worker when the first died without reading it; a streamed one
// over 64 KiB could not be.
func TestBufferedBodyReplayedWhole(t *testing.T) {
	t.Parallel()
	h := start(t, buffering(nil))
	resp, body := h.Get("/exit-later")
	wantBody(t, resp, body, 200, "bye")
	payload := strings.Repeat("x", 4*exchange.ReplayMax)
	resp, body = h.post("/digest", payload)
	sum := sha256.Sum256([]byte(payload))
	wantBody(t, resp, body, 200, hex.EncodeToString(sum[:]))
	h.logs.waitContains(t, "exited before reading request")
}

// PROTOCOL.md §5.2, §6.6: the deadline of a buffered request starts once its
// body is in: a slow upload does not eat the handler's time.
func TestBufferedBodyDeadlineStartsWhenComplete(t *testing.T) {
	t.Parallel()
	h := start(t, buffering(func(c *config.Config) { c.ExecTimeout = time.Second }))
	c, err := net.Dial("tcp", h.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "POST /sleep?ms=500 HTTP/1.1\r\nHost: x\r\nContent-Length: 6\r\n\r\nabc")
	time.Sleep(800 * time.Millisecond) // the client's pace, not a wait for readiness
	fmt.Fprintf(c, "def")
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 {
		t.Fatalf("status %d; want 200: the 800 ms upload counted against exec_timeout", resp.StatusCode)
	}
}

// PROTOCOL.md §6.6: chunked request bodies still stream, full duplex (§6.2).
func TestChunkedBodyStreamsWithBuffering(t *testing.T) {
	t.Parallel()
	h := start(t, buffering(nil))
	lockstep(t, h)
}
