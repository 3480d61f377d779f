package e2e

import (
	"bytes"
	"fmt"
)

// Faults of issue 8 beyond the crash checks of checks_errors.go: each asserts the client's
// status, that the worker is replaced with the right restart reason, and that later requests
// get their own responses.

// crashMidBody: §8.4 — a worker that exits while reading a 256 KiB body (more than a pipe
// holds) gives 502 worker_crashed with the request's id, a restart counted as crashed, and
// the next requests succeed.
func crashMidBody(t *T) {
	t.WaitIdle(2)
	wantCrashed(t, "crash-mid-body", func(id string) *Resp {
		return t.Post("/crash?when=mid-body", bytes.Repeat([]byte("b"), 256<<10), "X-Request-Id: "+id)
	})
}

// exitZeroMidRequest: §8.4 — a worker that exits with status 0 in the middle of a request is
// a crash all the same: 502 worker_crashed, restart counted as crashed.
func exitZeroMidRequest(t *T) {
	t.WaitIdle(2)
	wantCrashed(t, "exit-zero", func(id string) *Resp {
		return t.Get("/crash?when=before&status=0", "X-Request-Id: "+id)
	})
}

// wantCrashed sends the request send makes, whose worker exits before writing a byte of the
// response, and checks §8.4: 502 worker_crashed with the request's id, one restart counted as
// crashed, and later requests answered with their own responses.
func wantCrashed(t *T, name string, send func(id string) *Resp) {
	before := t.Restarts("crashed")
	id := rid(name)
	r := send(id)
	if eb := t.WatchdogError(r, 502, "worker_crashed"); eb.RequestID != id {
		t.Fatalf("%s: error body request_id %q; want %q", t.lastReq(), eb.RequestID, id)
	}
	t.WaitMetric(before+1, "afterburn_worker_restarts_total", "reason", "crashed")
	echoesOwnIDs(t, 2)
}

// hangAfterHead: §8.6, §8.7 — a worker that writes half a response and hangs has its client's
// body stopped visibly incomplete after "partial" at the deadline, and is killed once
// cancel_grace has passed (a response under way cannot be drained): the restart is counted as
// timeout, and the next requests get their own responses (never the rest of the old one).
//
// With lanes (§2.5 "At the deadline", "Faults confined to a lane") the client's response is
// aborted all the same and the worker is retired make-before-break: after cancel_grace with
// reason timeout when the watchdog judges the lane cannot be drained (its response under
// way), or with reason stuck once the never-ending late response outlasts cancel_grace. Either
// is one restart; the check accepts both.
func hangAfterHead(t *T) {
	t.WaitIdle(2)
	lanes := t.lanesPerWorker(2) > 1
	before, stuck := t.Restarts("timeout"), t.Restarts("stuck")
	cutBody(t, t.Get("/hang?when=after-head"), "partial")
	t.Eventually("a restart with reason timeout (or, with lanes, stuck)", func() (bool, string) {
		m := t.Metrics()
		tm, _ := m.Get("afterburn_worker_restarts_total", "reason", "timeout")
		st, _ := m.Get("afterburn_worker_restarts_total", "reason", "stuck")
		return tm >= before+1 || lanes && st >= stuck+1, fmt.Sprintf("timeout %v, stuck %v", tm, st)
	})
	echoesOwnIDs(t, 4)
	if got, st := t.Restarts("timeout"), t.Restarts("stuck"); got+st != before+stuck+1 {
		t.Fatalf("restarts{reason=timeout} %v, {reason=stuck} %v; want %v in all: one hang, one restart", got, st, before+stuck+1)
	}
}
