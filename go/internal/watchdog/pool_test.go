package watchdog

import (
	"testing"

	"github.com/afterburn-dev/afterburn/go/internal/watchdog/config"
	"github.com/afterburn-dev/afterburn/go/internal/watchdog/pool"
)

func (h *harness) pid() string {
	h.t.Helper()
	resp, body := h.Get("/pid")
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
	h := start(t, func(c *config.Config) { c.Workers = 3 })
	h.waitState("three idle workers", func(st pool.Status, ready bool) bool { return st.Idle == 3 })

	a := h.pid()
	for i := range 6 {
		if got := h.pid(); got != a {
			t.Fatalf("request %d one at a time: served by pid %s after %s; want the same, most recently idle worker", i+2, got, a)
		}
	}

	// With a busy, the next most recently idle one serves, and keeps serving.
	_, release := holdWorker(t, h) // failure_test.go
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
