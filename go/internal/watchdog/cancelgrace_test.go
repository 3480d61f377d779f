package watchdog

import (
	"io"
	"testing"
	"time"

	"github.com/afterburn-dev/afterburn/go/internal/watchdog/config"
	"github.com/afterburn-dev/afterburn/go/internal/watchdog/wire"
)

// PROTOCOL.md §8.6 with one lane: the client gets 504 at the deadline; the
// worker gets cancel_grace to end the late response before any kill.

// startOneLane runs a watchdog over the lane child serving one lane with
// exchange tokens (it does not list streams): the child cancels its handler
// 50 ms after the deadline itself (§5.2).
func startOneLane(t *testing.T, exec, grace time.Duration) *harness {
	t.Helper()
	return start(t, func(c *config.Config) {
		c.ExecTimeout = exec
		c.CancelGrace = grace
	}, "AFTERBURN_TEST_CHILD=lanes", "AFTERBURN_TEST_STREAMS=none")
}

// want504Soon checks that the answer came at the deadline, not after the
// grace.
func want504Soon(t *testing.T, took, grace time.Duration) {
	t.Helper()
	if took >= grace {
		t.Errorf("504 after %v; want it at the deadline, well before cancel_grace %v", took, grace)
	}
}

// A handler that stops at its cancellation: its late response is drained
// and dropped, and the same worker serves the next request.
func TestCancelGraceDrainedAndKept(t *testing.T) {
	t.Parallel()
	h := startOneLane(t, 300*time.Millisecond, 3*time.Second)
	_, before := h.Get("/lane")
	began := time.Now()
	resp, body := h.Get("/sleep?ms=60000")
	wantError(t, resp, body, 504, wire.ErrTimeout)
	want504Soon(t, time.Since(began), 3*time.Second)
	h.logs.waitContains(t, "child: cancelled")
	// Queued behind the drain: the same lane, once its late response is read.
	resp, after := h.Get("/lane")
	if resp.StatusCode != 200 || pidOf(after) != pidOf(before) {
		t.Fatalf("after the drain got %d %q; want 200 from pid %s", resp.StatusCode, after, pidOf(before))
	}
	if n := metricValue(t, h.wd.m.LateDiscarded); n != 1 {
		t.Errorf("late responses discarded %v; want 1", n)
	}
	if n := counter(t, h.wd.m.Restarts, "timeout"); n != 0 {
		t.Errorf("restarts{timeout} %v; want 0: the worker ended its late response in time", n)
	}
}

// killedAfterGrace checks that the worker that served before was replaced,
// with reason timeout, and not before the grace had passed since began plus
// the deadline.
func killedAfterGrace(t *testing.T, h *harness, before string, began time.Time, exec, grace time.Duration) {
	t.Helper()
	h.logs.waitContains(t, "replaced: timeout")
	if d := time.Since(began); d < exec+grace-50*time.Millisecond {
		t.Errorf("worker replaced %v after the request; want no sooner than exec_timeout %v + cancel_grace %v", d, exec, grace)
	}
	resp, after := h.Get("/lane")
	if resp.StatusCode != 200 || pidOf(after) == pidOf(before) {
		t.Fatalf("after the kill got %d %q; want 200 from a new worker (not pid %s)", resp.StatusCode, after, pidOf(before))
	}
	if n := counter(t, h.wd.m.Restarts, "timeout"); n != 1 {
		t.Errorf("restarts{timeout} %v; want 1", n)
	}
	if n := metricValue(t, h.wd.m.LateDiscarded); n != 0 {
		t.Errorf("late responses discarded %v; want 0", n)
	}
}

// A handler that ignores its cancellation: the late response does not come
// within the grace, and the worker is killed then.
func TestCancelGraceIgnoredKilledAfterGrace(t *testing.T) {
	t.Parallel()
	exec, grace := 300*time.Millisecond, 400*time.Millisecond
	h := startOneLane(t, exec, grace)
	_, before := h.Get("/lane")
	began := time.Now()
	resp, body := h.Get("/ignore?ms=60000")
	wantError(t, resp, body, 504, wire.ErrTimeout)
	want504Soon(t, time.Since(began)-exec, grace)
	h.logs.waitContains(t, "did not end within cancel_grace")
	killedAfterGrace(t, h, before, began, exec, grace)
}

// A response whose head came before the deadline cannot be read afresh: the
// client's response is aborted at the deadline (§8.7) and the worker killed
// at the end of the grace, even though it finished the response meanwhile.
func TestCancelGraceResponseBegunKilledAfterGrace(t *testing.T) {
	t.Parallel()
	exec, grace := 300*time.Millisecond, 600*time.Millisecond
	h := startOneLane(t, exec, grace)
	_, before := h.Get("/lane")
	began := time.Now()
	r, err := h.client.Get(h.url + "/begin")
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(r.Body)
	r.Body.Close()
	if r.StatusCode != 200 || err == nil {
		t.Fatalf("a response begun before the deadline: %d %q, err %v; want 200 and a read error (§8.7)", r.StatusCode, b, err)
	}
	if d := time.Since(began) - exec; d >= grace {
		t.Errorf("response aborted %v after the deadline; want at the deadline", d)
	}
	killedAfterGrace(t, h, before, began, exec, grace)
}

// A worker that does not list exchange: its late response could not be told
// from a stale one (§4.6), so it is killed at the end of the grace.
func TestCancelGraceNoExchangeKilledAfterGrace(t *testing.T) {
	t.Parallel()
	exec, grace := 300*time.Millisecond, 500*time.Millisecond
	h := start(t, func(c *config.Config) {
		c.ExecTimeout = exec
		c.CancelGrace = grace
	})
	_, before := h.Get("/pid")
	began := time.Now()
	resp, body := h.Get("/sleep?ms=60000")
	wantError(t, resp, body, 504, wire.ErrTimeout)
	want504Soon(t, time.Since(began)-exec, grace)
	h.logs.waitContains(t, "replaced: timeout")
	if d := time.Since(began); d < exec+grace-50*time.Millisecond {
		t.Errorf("worker replaced %v after the request; want no sooner than exec_timeout %v + cancel_grace %v", d, exec, grace)
	}
	resp, after := h.Get("/pid")
	if resp.StatusCode != 200 || after == before {
		t.Fatalf("after the kill got %d %q; want 200 from a new worker (not pid %s)", resp.StatusCode, after, before)
	}
	if n := counter(t, h.wd.m.Restarts, "timeout"); n != 1 {
		t.Errorf("restarts{timeout} %v; want 1", n)
	}
}
