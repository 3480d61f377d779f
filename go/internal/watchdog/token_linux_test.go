package watchdog

import (
	"testing"

	"github.com/afterburn-dev/afterburn/go/internal/watchdog/config"
	"github.com/afterburn-dev/afterburn/go/internal/watchdog/pool"
)

// PROTOCOL.md §4.6, §9.3: a stale response that arrives before the worker
// read a byte of the request proves no handler saw it: the request goes to
// another worker, and the client gets its own answer.
func TestExchangeTokenUnreadRequestResent(t *testing.T) {
	h := start(t, func(c *config.Config) { c.Workers = 2 }, "AFTERBURN_TEST_TOKENS=1")
	h.waitState("two idle workers", func(st pool.Status, _ bool) bool { return st.Idle == 2 })
	resp, body := h.Get("/stale-then-hang")
	wantBody(t, resp, body, 200, "armed")
	// The worker that answered went idle last: it gets the next request (§10.3).
	resp, body = h.Get("/after")
	wantBody(t, resp, body, 200, "ok GET /after")
	h.logs.waitContains(t, "before reading it: sending it to another worker")
	if got := counter(t, h.wd.m.ProtocolErrors, "exchange"); got != 1 {
		t.Errorf("protocol errors {kind=exchange} = %v; want 1", got)
	}
}
