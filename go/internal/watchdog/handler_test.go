package watchdog

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/afterburn-dev/afterburn/go/internal/watchdog/config"
	"github.com/afterburn-dev/afterburn/go/internal/watchdog/exchange"
	"github.com/afterburn-dev/afterburn/go/internal/watchdog/internal/testworker"
)

// TestMetrics: every metric of PROTOCOL.md §10.4 is exported.
func TestMetrics(t *testing.T) {
	t.Parallel()
	h := start(t, nil)
	h.Get("/x")
	resp, body := h.Get("/metrics")
	if resp.StatusCode != 200 {
		t.Fatalf("/metrics: %d", resp.StatusCode)
	}
	for _, want := range []string{
		`afterburn_requests_total{code="200"} 1`,
		"afterburn_request_duration_seconds_bucket",
		"afterburn_requests_in_flight ",
		"afterburn_queue_depth 0",
		"afterburn_queue_wait_seconds_bucket",
		`afterburn_requests_rejected_total{type="overloaded"} 0`,
		`afterburn_worker_restarts_total{reason="crashed"} 0`,
		"afterburn_worker_init_duration_seconds_count 1",
		`afterburn_workers{state="starting"} 0`,
		`afterburn_workers{state="idle"} 1`,
		`afterburn_workers{state="busy"} 0`,
		`afterburn_workers{state="backoff"} 0`,
		"afterburn_workers_crash_looping 0",
		`afterburn_protocol_errors_total{kind="handshake"} 0`,
		`afterburn_protocol_errors_total{kind="bad_response"} 0`,
		`afterburn_protocol_errors_total{kind="unsolicited_output"} 0`,
		`afterburn_response_buffer_bytes{where="memory"} 0`,
		`afterburn_response_buffer_bytes{where="file"} 0`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
}

// TestMetricsPort: §10.1 — /metrics is on a listener of its own (metrics_port
// 0 picks a free port and logs it before "listening on"), which answers
// nothing else, and the function port passes /metrics to the function; with
// metrics_port -1 there is no such listener and the function port answers
// /metrics.
func TestMetricsPort(t *testing.T) {
	t.Parallel()
	get := func(url string) (int, string) {
		t.Helper()
		resp, err := http.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for _, tc := range []struct {
		name        string
		metricsPort int
	}{
		{"own listener", 0},
		{"on port", config.MetricsOnPort},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg := testConfig()
			cfg.ListenHost = "127.0.0.1"
			cfg.MetricsPort = tc.metricsPort
			logs := &syncBuffer{}
			cfg.Log = logs
			cfg.Env = []string{"AFTERBURN_TEST_CHILD=1"}
			wd, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- wd.Run(ctx) }()
			defer func() {
				cancel()
				if err := <-done; err != nil {
					t.Errorf("Run: %v", err)
				}
			}()
			addr := strings.TrimPrefix(logs.waitContains(t, "listening on "), "afterburn-watchdog: listening on ")
			base := "http://" + addr
			metricsLine := ""
			for _, l := range strings.Split(logs.String(), "\n") {
				if strings.Contains(l, "metrics on ") {
					metricsLine = l
				}
			}
			if tc.metricsPort == config.MetricsOnPort {
				if metricsLine != "" {
					t.Errorf("metrics_port -1 logged %q; want no listener of its own", metricsLine)
				}
				if code, body := get(base + "/metrics"); code != 200 || !strings.Contains(body, "afterburn_workers") {
					t.Errorf("/metrics on port: %d %q; want the metrics", code, body[:min(len(body), 200)])
				}
				return
			}
			_, maddr, ok := strings.Cut(metricsLine, "metrics on ")
			if !ok || maddr == addr {
				t.Fatalf("metrics_port 0: no \"metrics on ADDR\" line of its own before \"listening on\"; log:\n%s", logs.String())
			}
			if code, body := get("http://" + maddr + "/metrics"); code != 200 || !strings.Contains(body, "afterburn_workers") {
				t.Errorf("metrics listener /metrics: %d %q; want the metrics", code, body[:min(len(body), 200)])
			}
			if code, _ := get("http://" + maddr + "/_/health"); code != 404 {
				t.Errorf("metrics listener /_/health: %d; want 404 (§10.1: health and readiness are on port)", code)
			}
			if code, body := get(base + "/metrics"); code != 200 || body != "ok GET /metrics" {
				t.Errorf("/metrics on port: %d %q; want the function's answer", code, body[:min(len(body), 200)])
			}
			if code, _ := get(base + "/_/health"); code != 200 {
				t.Errorf("/_/health on port: %d; want 200", code)
			}
		})
	}
}

// TestExpectContinue: §5.4 — the watchdog answers 100-continue itself and
// does not forward Expect.
func TestExpectContinue(t *testing.T) {
	t.Parallel()
	h := start(t, nil)
	c, err := net.Dial("tcp", h.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	io.WriteString(c, "POST /headers HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n")
	br := bufio.NewReader(c)
	line, err := br.ReadString('\n')
	if err != nil || line != "HTTP/1.1 100 Continue\r\n" {
		t.Fatalf("before the body: %q, %v; want 100 Continue", line, err)
	}
	br.ReadString('\n') // its blank line
	io.WriteString(c, "hello")
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	var seen testworker.Seen
	json.Unmarshal(b, &seen)
	if seen.Body != "hello" || seen.Header.Get("Expect") != "" {
		t.Errorf("worker saw body %q, Expect %q", seen.Body, seen.Header.Get("Expect"))
	}
	resp, _ = h.raw("POST /headers HTTP/1.1\r\nHost: x\r\nExpect: something-else\r\nContent-Length: 5\r\n\r\nhello", "POST")
	if resp.StatusCode != http.StatusExpectationFailed {
		t.Errorf("Expect: something-else got %d; want 417", resp.StatusCode)
	}
}

// TestRequestTargets: §4.2 — HTTP/1.0 without Host gets the address the
// client connected to; an absolute-form target is sent in origin-form.
func TestRequestTargets(t *testing.T) {
	t.Parallel()
	h := start(t, nil)
	for _, tc := range []struct{ raw, target, host string }{
		{"GET /headers?b HTTP/1.0\r\n\r\n", "/headers?b", h.addr},
		{"GET http://other.example/headers?r=1 HTTP/1.1\r\nHost: other.example\r\n\r\n", "/headers?r=1", "other.example"},
	} {
		resp, body := h.raw(tc.raw, "GET")
		var seen testworker.Seen
		json.Unmarshal([]byte(body), &seen)
		if resp.StatusCode != 200 || seen.Target != tc.target || seen.Host != tc.host {
			t.Errorf("%q: %d, worker saw target %q host %q; want %q %q", tc.raw, resp.StatusCode, seen.Target, seen.Host, tc.target, tc.host)
		}
	}
}

// TestHealthcheck: §3.5 — liveness handshakes on idle workers leave them
// serving.
func TestHealthcheck(t *testing.T) {
	t.Parallel()
	h := start(t, func(c *config.Config) { c.HealthcheckInterval = 5 * time.Millisecond })
	for range 20 {
		resp, body := h.Get("/x")
		wantBody(t, resp, body, 200, "ok GET /x")
	}
	if got := counter(t, h.wd.m.Restarts, "unresponsive"); got != 0 {
		t.Errorf(`restarts_total{reason="unresponsive"} = %v; want 0`, got)
	}
}

// TestHealthcheckUnresponsive: §3.5 — an idle worker that does not answer
// a liveness handshake within init_timeout is replaced.
func TestHealthcheckUnresponsive(t *testing.T) {
	t.Parallel()
	h := start(t, func(c *config.Config) {
		c.HealthcheckInterval = 20 * time.Millisecond
		c.InitTimeout = 200 * time.Millisecond
	}, "AFTERBURN_TEST_INIT=handshake-once")
	h.logs.waitContains(t, "w1 failed its liveness handshake")
	h.logs.waitContains(t, "replaced: unresponsive")
	if got := counter(t, h.wd.m.Restarts, "unresponsive"); got < 1 {
		t.Errorf(`restarts_total{reason="unresponsive"} = %v; want >= 1`, got)
	}
}

// TestShuttingDownNotReady: §9.2 — health and readiness fail once shutdown
// starts.
func TestShuttingDownNotReady(t *testing.T) {
	t.Parallel()
	h := start(t, nil)
	h.wd.stopping.Store(true)
	for _, path := range []string{"/_/health", "/_/ready"} {
		if resp, _ := h.Get(path); resp.StatusCode != 503 {
			t.Errorf("%s while stopping: %d; want 503", path, resp.StatusCode)
		}
	}
}

// TestRequestIDsAreRandomHex: generated ids (PROTOCOL.md §5.1) are 32 lower-case hex
// digits and do not repeat.
func TestRequestIDsAreRandomHex(t *testing.T) {
	seen := map[string]bool{}
	var digits [32][16]bool // which digits each position took
	var kept []string       // ids over their requests' own storage, read again after a collection
	for i := range 100000 {
		id := requestID(http.Header{}, false)
		if i%2 == 1 {
			id = requestIDIn(&(&functionRequest{}).id, http.Header{}, false)
			if i%1000 == 1 {
				kept = append(kept, id, strings.Clone(id))
			}
		}
		if !hex32.MatchString(id) || seen[id] {
			t.Fatalf("request id %q: not 32 hex digits, or repeated after %d", id, len(seen))
		}
		seen[id] = true
		for i := range len(id) {
			d, _ := strconv.ParseUint(id[i:i+1], 16, 8)
			digits[i][d] = true
		}
	}
	runtime.GC()
	for i := 0; i < len(kept); i += 2 {
		if kept[i] != kept[i+1] {
			t.Fatalf("an id over its request's storage changed after a collection: %q, was %q", kept[i], kept[i+1])
		}
	}
	if id := requestIDIn(&(&functionRequest{}).id, http.Header{"X-Request-Id": {"abc-1"}}, true); id != "abc-1" {
		t.Errorf("a trusted X-Request-Id: %q; want it kept", id)
	}
	for i, took := range digits {
		for d, ok := range took {
			if !ok {
				t.Fatalf("position %d of 100,000 ids never held the digit %x: not 128 random bits", i, d)
			}
		}
	}
	for _, v := range []uint64{0, 1, 0xff, 0x0123456789abcdef, ^uint64(0)} {
		var le [8]byte
		binary.LittleEndian.PutUint64(le[:], v)
		if got, want := string(appendHex64(nil, v)), hex.EncodeToString(le[:]); got != want {
			t.Errorf("appendHex64(%#x) = %q; want %q", v, got, want)
		}
	}
}

// TestDateField: the Date field the watchdog adds is net/http's own format, the same
// value within a second and a new one the next.
func TestDateField(t *testing.T) {
	at := time.Date(2026, 11, 26, 1, 2, 3, 0, time.FixedZone("x", 3600))
	a, b := exchange.DateField(at), exchange.DateField(at.Add(999*time.Millisecond))
	if len(a) != 1 || a[0] != "Thu, 26 Nov 2026 00:02:03 GMT" || b[0] != a[0] || cap(a) != 1 {
		t.Fatalf("dateField = %q (cap %d), then %q; want [Thu, 26 Nov 2026 00:02:03 GMT], capped", a, cap(a), b)
	}
	if c := exchange.DateField(at.Add(time.Second)); c[0] != "Thu, 26 Nov 2026 00:02:04 GMT" {
		t.Fatalf("a second later: %q", c)
	}
}
