package e2e

import "bytes"

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

// hangAfterHead: §8.6, §8.7 — a worker that writes half a response and hangs is killed at the
// deadline: the client's body stops visibly incomplete after "partial", the restart is counted
// as timeout, and the next requests get their own responses (never the rest of the old one).
func hangAfterHead(t *T) {
	t.WaitIdle(2)
	before := t.Restarts("timeout")
	cutBody(t, t.Get("/hang?when=after-head"), "partial")
	t.WaitMetric(before+1, "afterburn_worker_restarts_total", "reason", "timeout")
	echoesOwnIDs(t, 4)
	if got := t.Restarts("timeout"); got != before+1 {
		t.Fatalf("restarts{reason=timeout} %v; want %v: one hang, one restart", got, before+1)
	}
}
