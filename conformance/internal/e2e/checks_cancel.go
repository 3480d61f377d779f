package e2e

import (
	"encoding/json"
	"regexp"
	"strings"
	"time"
)

// deadlineCancelBeforeKill: §8.6, §5.2 — with one lane (-lanes 1: the default, auto, may
// give a library several, §2.5), a deadline is answered 504 at once and
// the worker is not killed then: the library cancels the handler itself 50 ms after the
// deadline, and the watchdog gives the worker cancel_grace to end its late response.
//
//   - -exec_timeout 500ms -cancel_grace 2s: /wait-cancel?ms=5000 gets 504 near 500 ms, the
//     handler observes its cancellation (the fixture logs "cancelled <id>"), and a library that
//     lists exchange keeps its worker: the late response is drained (counted in
//     afterburn_late_responses_discarded_total), the same process serves on and no restart is
//     counted. A library without exchange has its worker killed at the end of the grace.
//   - -cancel_grace 1s: /ignore-cancel?ms=60000 gets 504 near 500 ms; while the grace runs
//     the worker still holds the exchange's late response, so /_/ready counts it busy, not
//     idle (§9.2); it is killed once the grace has passed, not before: one restart with
//     reason timeout, and a new process serves.
func deadlineCancelBeforeKill(t *T) {
	w := t.StartWatchdog([]string{"-workers", "1", "-lanes", "1", "-exec_timeout", "500ms", "-cancel_grace", "2s"}, nil, true)
	pid := t.whoami(t.Get("/whoami")).Pid
	late := t.Metric("afterburn_late_responses_discarded_total")
	from := w.Log.Len()
	id := rid("cancelme")
	t.timeoutWithin("/wait-cancel?ms=5000", id, 450*time.Millisecond, 1500*time.Millisecond, "at exec_timeout (500ms), not after cancel_grace (2s)")
	t.LogWait(from, regexp.MustCompile(`cancelled `+regexp.QuoteMeta(id)))
	noExchange := strings.Contains(w.Log.String(), "does not list exchange")
	if noExchange {
		// §8.6: without tokens a late response cannot be told from a stale one (§4.6).
		t.WaitMetric(1, "afterburn_worker_restarts_total", "reason", "timeout")
	} else {
		t.WaitMetric(late+1, "afterburn_late_responses_discarded_total")
		// §2.7: under isolation=request every request has a process of its own anyway.
		if now := t.whoami(t.Get("/whoami")).Pid; now != pid && !t.cfg.isolated() {
			t.Fatalf("/whoami: pid %d; want the same worker %d: a handler that stops at its cancellation within cancel_grace keeps its worker (§8.6)", now, pid)
		}
		if n := t.Restarts("timeout"); n != 0 {
			t.Fatalf("restarts{reason=timeout} %v; want 0: the late response was drained (§8.6)", n)
		}
	}
	w.Stop()

	w = t.StartWatchdog([]string{"-workers", "1", "-lanes", "1", "-exec_timeout", "500ms", "-cancel_grace", "1s"}, nil, true)
	pid = t.whoami(t.Get("/whoami")).Pid
	sent := time.Now()
	t.timeoutWithin("/ignore-cancel?ms=60000", rid("ignore"), 0, 1500*time.Millisecond, "at exec_timeout (500ms)")
	// Read before the grace ends (sent + 1.5 s), or it says nothing of the grace.
	if _, st := t.ReadyStatus(); time.Since(sent) < 1400*time.Millisecond && (st.Busy == nil || *st.Busy != 1 || st.Idle == nil || *st.Idle != 0) {
		body, _ := json.Marshal(st)
		t.Fatalf("/_/ready during cancel_grace: %s; want the worker busy, not idle: it still holds the late response (§9.2, §8.6)", body)
	}
	t.WaitMetric(1, "afterburn_worker_restarts_total", "reason", "timeout")
	if d := time.Since(sent); d < 1450*time.Millisecond {
		t.Fatalf("the worker was replaced %v after the request; want it killed only once cancel_grace (1s) has passed after the deadline (500ms) (§8.6)", d)
	}
	// The replacement answers its handshake first: how fast a worker starts (a JVM
	// framework's takes seconds) is not this check's subject, and a request queued past
	// exec_timeout meanwhile would rightly be a 504 (§5.2).
	t.WaitIdle(1)
	if now := t.whoami(t.Get("/whoami")).Pid; now == pid {
		t.Fatalf("/whoami: still pid %d; want a new worker: a handler ignoring its cancellation past cancel_grace is killed (§8.6)", pid)
	}
}
