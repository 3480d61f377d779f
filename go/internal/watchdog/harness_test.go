package watchdog

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/afterburn-dev/afterburn/go/internal/watchdog/config"
	"github.com/afterburn-dev/afterburn/go/internal/watchdog/pool"
	"github.com/afterburn-dev/afterburn/go/internal/watchdog/wire"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// waitLimit bounds every wait on a signal; tests never sleep to wait.
const waitLimit = 15 * time.Second

// syncBuffer is the watchdog's log in tests: safe for concurrent writes,
// and waitable for a line.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
	ch chan struct{} // closed at the next write
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ch != nil {
		close(s.ch)
		s.ch = nil
	}
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// waitFor waits until the log holds a line for which match is true.
func (s *syncBuffer) waitFor(t *testing.T, what string, match func(line string) bool) string {
	t.Helper()
	var found string
	s.waitText(t, "line "+what, func(text string) bool {
		for _, line := range strings.Split(text, "\n") {
			if match(line) {
				found = line
				return true
			}
		}
		return false
	})
	return found
}

// waitText waits until cond holds for the whole log.
func (s *syncBuffer) waitText(t *testing.T, what string, cond func(text string) bool) {
	t.Helper()
	timeout := time.NewTimer(waitLimit)
	defer timeout.Stop()
	for {
		s.mu.Lock()
		if cond(s.b.String()) {
			s.mu.Unlock()
			return
		}
		if s.ch == nil {
			s.ch = make(chan struct{})
		}
		ch := s.ch
		s.mu.Unlock()
		select {
		case <-ch:
		case <-timeout.C:
			t.Fatalf("no log %s after %v; log:\n%s", what, waitLimit, s.String())
		}
	}
}

func (s *syncBuffer) waitContains(t *testing.T, sub string) string {
	t.Helper()
	return s.waitFor(t, "containing "+sub, func(l string) bool { return strings.Contains(l, sub) })
}

// harness is a watchdog serving on 127.0.0.1 with the test binary as its
// worker (child_test.go).
type harness struct {
	t      *testing.T
	wd     *Watchdog
	addr   string
	url    string
	logs   *syncBuffer
	client *http.Client
	cancel context.CancelFunc
	done   chan error
}

// testConfig is a small, fast configuration: one worker, short limits.
func testConfig() config.Config {
	return config.Config{
		Command:         []string{os.Args[0]},
		Workers:         1,
		ExecTimeout:     10 * time.Second,
		ReadTimeout:     10 * time.Second,
		WriteTimeout:    10 * time.Second,
		InitTimeout:     10 * time.Second,
		ShutdownTimeout: 10 * time.Second,
		CancelGrace:     time.Second,
		MaxRequestBody:  8 << 20,
		MaxHeaderBytes:  32768,
		PrefixLogs:      true,
		Handshake:       true,
		TrustRequestID:  true,
		// Streaming request bodies, as before §6.6, unless a test asks for
		// buffering: most tests here are about the exchange itself.
		RequestBuffering:     false,
		RequestBufferMemory:  config.DefaultRequestBufferMemory,
		ResponseBuffering:    true,
		ResponseBufferMemory: 1 << 20,
		BufferSpillMax:       1 << 30,
		MetricsPort:          config.MetricsOnPort, // start serves no metrics listener
	}
}

// start runs a watchdog configured by testConfig, then mut, with extra
// environment for the child.
func start(t *testing.T, mut func(*config.Config), childEnv ...string) *harness {
	t.Helper()
	cfg := testConfig()
	if mut != nil {
		mut(&cfg)
	}
	logs := &syncBuffer{}
	cfg.Log = logs
	cfg.Env = append([]string{"AFTERBURN_TEST_CHILD=1"}, childEnv...)
	wd, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	h := &harness{
		t: t, wd: wd, logs: logs, cancel: cancel, done: make(chan error, 1),
		addr:   ln.Addr().String(),
		url:    "http://" + ln.Addr().String(),
		client: &http.Client{Transport: &http.Transport{DisableCompression: true}},
	}
	go func() { h.done <- wd.serve(ctx, ln, nil) }()
	t.Cleanup(func() {
		h.stop()
		// state.go: a transition its tables do not hold is a bug, whatever
		// the test was about.
		if strings.Contains(logs.String(), "bad_transition") {
			t.Errorf("the pool refused a transition (bad_transition in its log)")
		}
		if t.Failed() {
			t.Logf("watchdog log:\n%s", logs.String())
		}
	})
	return h
}

// stop shuts the watchdog down gracefully and returns what serve returned.
func (h *harness) stop() error {
	h.cancel()
	h.client.CloseIdleConnections()
	select {
	case err := <-h.done:
		h.done <- err // stop may be called again
		return err
	case <-time.After(waitLimit + h.wd.cfg.ShutdownTimeout):
		h.t.Fatalf("watchdog did not stop")
		return nil
	}
}

// waitState waits until cond holds for the pool's state.
func (h *harness) waitState(what string, cond func(st pool.Status, ready bool) bool) {
	h.t.Helper()
	timeout := time.NewTimer(waitLimit)
	defer timeout.Stop()
	for {
		ch := h.wd.pool.Watch()
		if st, ready := h.wd.pool.Snapshot(); cond(st, ready) {
			return
		}
		select {
		case <-ch:
		case <-timeout.C:
			st, ready := h.wd.pool.Snapshot()
			h.t.Fatalf("pool never reached %s; now %+v ready=%v", what, st, ready)
		}
	}
}

// do sends req and returns the response with its whole body.
func (h *harness) do(req *http.Request) (*http.Response, string) {
	h.t.Helper()
	resp, err := h.client.Do(req)
	if err != nil {
		h.t.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		h.t.Fatalf("%s %s: reading body: %v", req.Method, req.URL, err)
	}
	return resp, string(b)
}

func (h *harness) Get(path string) (*http.Response, string) {
	h.t.Helper()
	req, _ := http.NewRequest("GET", h.url+path, nil)
	return h.do(req)
}

func (h *harness) post(path, body string) (*http.Response, string) {
	h.t.Helper()
	req, _ := http.NewRequest("POST", h.url+path, strings.NewReader(body))
	return h.do(req)
}

// raw sends the bytes of a request on a new connection and reads one
// response, for heads net/http's client would not write.
func (h *harness) raw(request string, method string) (*http.Response, string) {
	h.t.Helper()
	c, err := net.Dial("tcp", h.addr)
	if err != nil {
		h.t.Fatal(err)
	}
	defer c.Close()
	if _, err := io.WriteString(c, request); err != nil {
		h.t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), &http.Request{Method: method})
	if err != nil {
		h.t.Fatalf("reading the response to %q: %v", request, err)
	}
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		h.t.Fatalf("reading the body of the response to %q: %v", request, err)
	}
	return resp, string(b)
}

// counter reads one series of a counter vector.
func counter(t *testing.T, vec *prometheus.CounterVec, label string) float64 {
	t.Helper()
	var m dto.Metric
	if err := vec.WithLabelValues(label).Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}

// wantError checks an error response of PROTOCOL.md §8.1.
func wantError(t *testing.T, resp *http.Response, body string, status int, typ wire.ErrorType) {
	t.Helper()
	if resp.StatusCode != status {
		t.Fatalf("status %d; want %d (body %q)", resp.StatusCode, status, body)
	}
	if got := resp.Header.Get("Content-Type"); got != "application/json" {
		t.Errorf("Content-Type %q; want application/json", got)
	}
	if got := resp.Header.Get("AfterBurn-Error"); got != string(typ) {
		t.Errorf("AfterBurn-Error %q; want %q", got, typ)
	}
	var e wire.ErrorBody
	if err := json.Unmarshal([]byte(body), &e); err != nil {
		t.Fatalf("error body %q: %v", body, err)
	}
	if e.Type != typ || e.Message == "" {
		t.Errorf("error body %+v; want type %q and a message", e, typ)
	}
	if id := resp.Header.Get("AfterBurn-Request-Id"); e.RequestID == "" || e.RequestID != id {
		t.Errorf("error body request_id %q; response AfterBurn-Request-Id %q", e.RequestID, id)
	}
}

func wantBody(t *testing.T, resp *http.Response, body string, status int, want string) {
	t.Helper()
	if resp.StatusCode != status || body != want {
		t.Fatalf("got %d %q; want %d %q", resp.StatusCode, body, status, want)
	}
}

// getLater sends GET path in the background; its channel gets "STATUS body"
// (or the client's error) once the response has been read whole.
func (h *harness) getLater(path string) <-chan string {
	got := make(chan string, 1)
	go func() {
		resp, err := h.client.Get(h.url + path)
		if err != nil {
			got <- err.Error()
			return
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		got <- strconv.Itoa(resp.StatusCode) + " " + string(b)
	}()
	return got
}

// waitQueued waits until n requests wait in the queue.
func (h *harness) waitQueued(n int) {
	h.t.Helper()
	timeout := time.NewTimer(waitLimit)
	defer timeout.Stop()
	for {
		ch := h.wd.pool.Watch()
		if h.wd.pool.Queued() == n {
			return
		}
		select {
		case <-ch:
		case <-timeout.C:
			h.t.Fatalf("queue never reached %d", n)
		}
	}
}
