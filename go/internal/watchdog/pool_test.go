package watchdog

import (
	"io"
	"net/http"
	"testing"
)

// holdWorker keeps one more worker busy: it sends POST /digest, whose
// handler reads the whole body before answering, with a body that stays
// open until release is called. release ends the body and waits for the
// response.
func (h *harness) holdWorker() (release func()) {
	h.t.Helper()
	st, _ := h.wd.pool.snapshot()
	busy := st.Busy
	pr, pw := io.Pipe()
	req, _ := http.NewRequest("POST", h.url+"/digest", pr)
	answered := make(chan error, 1)
	go func() {
		resp, err := h.client.Do(req)
		if err == nil {
			_, err = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		answered <- err
	}()
	h.waitState("one more busy worker", func(st status, ready bool) bool { return st.Busy == busy+1 })
	return func() {
		h.t.Helper()
		pw.Close()
		if err := <-answered; err != nil {
			h.t.Fatalf("the held POST /digest: %v", err)
		}
	}
}

func (h *harness) pid() string {
	h.t.Helper()
	resp, body := h.get("/pid")
	if resp.StatusCode != 200 {
		h.t.Fatalf("/pid: %d %q", resp.StatusCode, body)
	}
	return body
}

// PROTOCOL.md §10.3: the idle worker handed out is the one that became idle
// last, so one request at a time is always served by the same worker; handing
// them out in turn would rotate through all three.
func TestIdleWorkersMostRecentFirst(t *testing.T) {
	t.Parallel()
	h := start(t, func(c *Config) { c.Workers = 3 })
	h.waitState("three idle workers", func(st status, ready bool) bool { return st.Idle == 3 })

	a := h.pid()
	for i := range 6 {
		if got := h.pid(); got != a {
			t.Fatalf("request %d one at a time: served by pid %s after %s; want the same, most recently idle worker", i+2, got, a)
		}
	}

	// With a busy, the next most recently idle one serves, and keeps serving.
	release := h.holdWorker()
	b := h.pid()
	if b == a {
		t.Fatalf("pid %s served while it was held busy", a)
	}
	if got := h.pid(); got != b {
		t.Fatalf("after %s served, %s did; want %s again", b, got, b)
	}
	// Once released, a is the most recently idle again.
	release()
	if got := h.pid(); got != a {
		t.Fatalf("after the held worker %s was released, %s served; want %s", a, got, a)
	}
}
