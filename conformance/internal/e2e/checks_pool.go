package e2e

import (
	"fmt"
	"os"
	"regexp"
	"strings"
	"syscall"
	"time"
)

// ---- default group: -workers 2

// idleMostRecentFirst: one request at a time goes to the worker that became
// idle last (§10.3), so a single worker serves a sequence of requests, and a
// worker released after another serves before it.
func idleMostRecentFirst(t *T) {
	if t.cfg.isolated() {
		t.Skipf("under isolation=request no worker becomes idle again: each serves one request (§2.7)")
	}
	t.WaitIdle(2)
	rc := t.Dial()
	whoami := func() int {
		rc.Send("GET /whoami HTTP/1.1\r\nHost: fn\r\n\r\n")
		return t.whoami(rc.Read("GET")).Pid
	}
	last := whoami()
	for i := 2; i <= 10; i++ {
		if pid := whoami(); pid != last {
			t.Fatalf("request %d of a sequence was served by pid %d after pid %d; want the most recently idle worker, the same", i, pid, last)
		}
	}
	held := t.background("/sleep?ms=300", rid("held"))
	t.WaitBusy(1)
	other := whoami()
	if other == last {
		t.Fatalf("pid %d served /whoami while it was busy with /sleep", last)
	}
	t.await(held, "GET /sleep?ms=300")
	t.WaitIdle(2) // the sleeper is back in the pool, after pid other
	if pid := whoami(); pid != last {
		t.Fatalf("after pid %d served and pid %d then finished /sleep, pid %d served; want %d, the most recently idle", other, last, pid, last)
	}
}

// ---- limits group: -max_request_body 1024

func bodyTooLargeCL(t *T) {
	t.WaitIdle(2)
	before := t.Metric("afterburn_requests_rejected_total", "type", "body_too_large")
	restarts := t.Metrics().Sum("afterburn_worker_restarts_total")
	rc := t.Dial()
	rc.SendLenient("POST /echo HTTP/1.1\r\nHost: fn\r\nContent-Length: 2048\r\n\r\n" + strings.Repeat("z", 2048))
	t.WatchdogError(rc.Read("POST"), 413, "body_too_large")
	t.WaitMetric(before+1, "afterburn_requests_rejected_total", "type", "body_too_large")
	if after := t.Metrics().Sum("afterburn_worker_restarts_total"); after != restarts {
		t.Fatalf("worker restarts went from %v to %v; want none: the 413 comes before any worker is used (§6.4)", restarts, after)
	}
}

func bodyTooLargeChunked(t *T) {
	t.WaitIdle(2)
	before := t.Restarts("request_aborted")
	rc := t.Dial()
	chunk := "200\r\n" + strings.Repeat("y", 512) + "\r\n"
	rc.SendLenient("POST /echo HTTP/1.1\r\nHost: fn\r\nTransfer-Encoding: chunked\r\n\r\n" +
		strings.Repeat(chunk, 4) + "0\r\n\r\n")
	t.WatchdogError(rc.Read("POST"), 413, "body_too_large")
	t.WaitMetric(before+1, "afterburn_worker_restarts_total", "reason", "request_aborted")
	echoesOwnIDs(t, 4)
}

// ---- timeout group: -exec_timeout 1s

func deadlineVisible(t *T) {
	m := t.JSON(t.Get("/deadline"), 200)
	ms, ok := m["remaining_ms"].(float64)
	if m["has_deadline"] != true || !ok || ms <= 0 || ms > 1000 {
		t.Fatalf("%s: got %v; want has_deadline true and 0 < remaining_ms ≤ 1000 (exec_timeout 1s, §5.2)", t.lastReq(), m)
	}
}

func execTimeout(t *T) {
	t.WaitIdle(2)
	if t.lanesPerWorker(2) > 1 {
		execTimeoutLanes(t)
		return
	}
	before := t.Restarts("timeout")
	slowPast504(t)
	t.WaitMetric(before+1, "afterburn_worker_restarts_total", "reason", "timeout")
	echoesOwnIDs(t, 8) // the killed worker's stale response reaches nobody (§8.6)
}

// slowPast504 sends a request whose handler ignores its cancellation and
// sleeps past exec_timeout (1s), and checks its 504 timeout, with its own
// request id, at the deadline (§8.6). /ignore-cancel, not /sleep: a library
// may cancel a plain sleep at its own deadline (Python's alarm, §5.2).
func slowPast504(t *T) {
	t.timeoutWithin("/ignore-cancel?ms=5000", rid("slow"), 900*time.Millisecond, 3*time.Second, "at exec_timeout (1s)")
}

// timeoutWithin sends GET path with request id id and requires its 504
// timeout, carrying that id, between lo and hi after it was sent (§8.6):
// when, says want.
func (t *T) timeoutWithin(path, id string, lo, hi time.Duration, want string) *Resp {
	r := t.Get(path, "X-Request-Id: "+id)
	if eb := t.WatchdogError(r, 504, "timeout"); eb.RequestID != id {
		t.Fatalf("%s: error body request_id %q; want %q", t.lastReq(), eb.RequestID, id)
	}
	if r.Elapsed < lo || r.Elapsed > hi {
		t.Fatalf("%s: the 504 came after %v; want it %s", t.lastReq(), r.Elapsed, want)
	}
	return r
}

// execTimeoutLanes is exec-timeout for workers served on several lanes.
// §8.6, §2.5 "At the deadline": the worker is not killed; the client gets
// 504, the exchange is cancelled (a line on the cancel pipe) and its lane
// drains: the late response is read and discarded, reaching no client.
func execTimeoutLanes(t *T) {
	restarts := t.Metrics().Sum("afterburn_worker_restarts_total")
	cancels := t.Metric("afterburn_lane_cancels_total")
	late := t.Metric("afterburn_late_responses_discarded_total")
	pids := t.Workers()
	slowPast504(t)
	t.WaitMetric(cancels+1, "afterburn_lane_cancels_total")
	echoesOwnIDs(t, 8) // the late response reaches nobody (§2.5)
	t.WaitMetric(late+1, "afterburn_late_responses_discarded_total")
	echoesOwnIDs(t, 8)
	if now := t.Metrics().Sum("afterburn_worker_restarts_total"); now != restarts {
		t.Fatalf("worker restarts went from %v to %v; want none: with lanes a deadline cancels the exchange and drains its lane, it does not kill the worker (§8.6, §2.5)", restarts, now)
	}
	if now := t.Workers(); !samePids(pids, now) {
		t.Fatalf("worker processes changed from %v to %v; want the same (§2.5)", pids, now)
	}
}

// ---- single group: -workers 1 -max_inflight 2 -exec_timeout 1s, slow init

// background sends a request in a goroutine; the channel yields its
// response (Response nil and BodyErr set on a transport error).
func (t *T) background(path, id string) <-chan *Resp {
	ch := make(chan *Resp, 1)
	req := t.NewRequest("GET", path, nil, "X-Request-Id: "+id)
	go func() {
		r, err := t.DoErr(req)
		if err != nil {
			r = &Resp{BodyErr: err}
		}
		ch <- r
	}()
	return ch
}

func (t *T) await(ch <-chan *Resp, what string) *Resp {
	select {
	case r := <-ch:
		if r.Response == nil {
			t.Fatalf("%s: %v", what, r.BodyErr)
		}
		t.setLast(what)
		return r
	case <-t.ctx.Done():
		t.Fatalf("%s: no response", what)
	}
	return nil
}

func (t *T) waitQueued(n int) {
	t.Eventually(fmt.Sprintf("afterburn_queue_depth %d", n), func() (bool, string) {
		v := t.Metric("afterburn_queue_depth")
		return v == float64(n), fmt.Sprint(v)
	})
}

// waitLanesBusy waits until n lanes of the pool are busy (§2.5), or with
// one lane per worker until n workers are.
func (t *T) waitLanesBusy(n int) {
	if t.k() <= 1 {
		t.WaitBusy(n)
		return
	}
	t.WaitLanes(fmt.Sprintf("%d busy lane(s)", n), func(l LaneCounts) bool { return l.Busy == n })
}

// singleMaxInflight is the single group's max_inflight: 2, or K+1 under
// -lanes K (the group's LaneFlags).
func (t *T) singleMaxInflight() int {
	if k := t.cfg.lanes(); k > 1 {
		return k + 1
	}
	return 2
}

// maxInflight holds max_inflight requests, every lane of the one worker
// busy and the rest queued (§2.5: a request queues only when no lane is
// free), and requires one more to be refused 429 at once (§10.3).
func maxInflight(t *T) {
	t.WaitIdle(1)
	l, m := t.lanesPerWorker(1), t.singleMaxInflight()
	var held, queued []<-chan *Resp
	for range l {
		held = append(held, t.background("/sleep?ms=600", rid("held")))
	}
	t.waitLanesBusy(l)
	for range m - l {
		queued = append(queued, t.background("/sleep?ms=1", rid("queued")))
	}
	t.waitQueued(m - l)
	r := t.Get("/echo", "X-Request-Id: "+rid("over"))
	t.WatchdogError(r, 429, "overloaded")
	if r.Elapsed > 500*time.Millisecond {
		t.Fatalf("%s: the 429 took %v; want it at once (§10.3)", t.lastReq(), r.Elapsed)
	}
	for _, a := range held {
		if m := t.JSON(t.await(a, "GET /sleep?ms=600"), 200); m["slept_ms"] != 600.0 {
			t.Fatalf("GET /sleep?ms=600: got %v", m)
		}
	}
	for _, b := range queued {
		r := t.await(b, "GET /sleep?ms=1")
		if t.cfg.isolated() && r.StatusCode == 504 {
			// §2.7, §10.3: it waited for the next spare, whose after-fork hook
			// (FIXTURE_AFTER_FORK_SLEEP_MS) outlasts its deadline.
			t.WatchdogError(r, 504, "timeout")
			continue
		}
		if m := t.JSON(r, 200); m["slept_ms"] != 1.0 {
			t.Fatalf("GET /sleep?ms=1: got %v", m)
		}
	}
}

func queuedPastDeadline(t *T) {
	t.WaitIdle(1)
	l := t.lanesPerWorker(1)
	before := t.Restarts("timeout")
	late := t.Metric("afterburn_late_responses_discarded_total")
	// One lane: the held request, which ignores its cancellation, is
	// answered 504 at its deadline and its worker killed cancel_grace (1s)
	// later, after the queued request's deadline (§8.6).
	// Several lanes (§2.5 "At the deadline"): the worker lives on, and each
	// held lane drains until its late response; /ignore-cancel keeps them
	// draining past the queued request's deadline (well within the group's
	// cancel_grace under lanes, 5s).
	// /ignore-cancel: a plain /sleep may be cancelled by the library's own
	// deadline (Python's alarm, §5.2) and end within the grace.
	path := "/ignore-cancel?ms=5000"
	if l > 1 {
		path = "/ignore-cancel?ms=4000"
	}
	var held []<-chan *Resp
	for range l {
		held = append(held, t.background(path, rid("held")))
	}
	t.waitLanesBusy(l)
	idB := rid("queued")
	sent := time.Now()
	b := t.background("/whoami", idB)
	t.waitQueued(1)
	// With one lane the held request's replacement takes
	// FIXTURE_INIT_SLEEP_MS=1000 to start, longer than the queued
	// request has left, so the queued one must time out in the queue.
	for _, a := range held {
		t.WatchdogError(t.await(a, "GET "+path), 504, "timeout")
	}
	rb := t.await(b, "GET /whoami (queued; X-Request-Id: "+idB+")")
	if eb := t.WatchdogError(rb, 504, "timeout"); eb.RequestID != idB {
		t.Fatalf("%s: error body request_id %q; want %q", t.lastReq(), eb.RequestID, idB)
	}
	if d := time.Since(sent); d > 1900*time.Millisecond {
		t.Fatalf("%s: the queued request's 504 came after %v; want it at its deadline, 1s after it arrived (§5.2)", t.lastReq(), d)
	}
	if l > 1 {
		// §2.5: the drained lanes free again, no worker replaced.
		t.WaitMetric(late+float64(l), "afterburn_late_responses_discarded_total")
		if got := t.Restarts("timeout"); got != before {
			t.Fatalf("restarts{reason=timeout} went from %v to %v; want none: with lanes a deadline drains the lane (§8.6, §2.5)", before, got)
		}
	} else {
		t.WaitMetric(before+1, "afterburn_worker_restarts_total", "reason", "timeout")
	}
	t.WaitIdle(1)
}

// ---- banner and stdio groups

func bannerFD(t *T) {
	echoesOwnIDs(t, 2)
	// Printed during initialisation: by worker 1, or in fork mode by the template, which
	// initialises once for every worker and is logged as w0 (§2.6).
	t.LogWait(0, regexp.MustCompile(`\bw[01]\b[^\n]*HTTP/1\.1 200 OK banner-fd`))
}

func stdioMode(t *T) {
	echoesOwnIDs(t, 2)
	m := t.JSON(t.Get("/print?text="+rid("stdio-print")), 200)
	if m["printed"] != true {
		t.Fatalf("%s: got %v; want printed true", t.lastReq(), m)
	}
	echoesOwnIDs(t, 2)
	t.LogWait(0, regexp.MustCompile(`banner-stdio`))
}

// ---- lifecycle group: a watchdog per check

func initFailureCrashLoop(t *T) {
	f, err := os.CreateTemp("", "afterburn-init-fail-*")
	if err != nil {
		t.Fatalf("temp file: %v", err)
	}
	f.Close()
	path := f.Name()
	t.Cleanup(func() { os.Remove(path) })
	t.StartWatchdog([]string{"-workers", "2"}, map[string]string{"FIXTURE_INIT_FAIL_IF_EXISTS": path}, false)
	t.Eventually("afterburn_workers_crash_looping 2", func() (bool, string) {
		v := t.Metric("afterburn_workers_crash_looping")
		return v == 2, fmt.Sprint(v)
	})
	code, st := t.ReadyStatus()
	if code != 503 || st.CrashLooping == nil || *st.CrashLooping != 2 {
		t.Fatalf("GET /_/ready while every slot is crash-looping: got %d %+v; want 503 with crash_looping 2", code, st)
	}
	if n := t.Restarts("init_failed"); n < 6 {
		t.Fatalf(`afterburn_worker_restarts_total{reason="init_failed"} is %v; want at least 6 (three per slot)`, n)
	}
	r := t.Get("/echo")
	t.WatchdogError(r, 503, "unavailable")
	if r.Elapsed > 500*time.Millisecond {
		t.Fatalf("%s: the 503 took %v; want it at once, not queued (§9.2)", t.lastReq(), r.Elapsed)
	}
	os.Remove(path)
	t.WaitIdle(1)
	echoesOwnIDs(t, 2)
}

func initTimeout(t *T) {
	t.StartWatchdog([]string{"-workers", "1", "-init_timeout", "500ms"},
		map[string]string{"FIXTURE_INIT_SLEEP_MS": "5000"}, false)
	t.WaitMetric(1, "afterburn_worker_restarts_total", "reason", "init_timeout")
	if code, _ := t.ReadyStatus(); code != 503 {
		t.Fatalf("GET /_/ready with no worker past its handshake: got %d; want 503", code)
	}
}

func sigtermGraceful(t *T) {
	w := t.StartWatchdog([]string{"-workers", "1", "-shutdown_timeout", "10s"}, nil, true)
	a := t.background("/sleep?ms=1000", rid("inflight"))
	t.WaitBusy(1)
	if err := w.Signal(syscall.SIGTERM); err != nil {
		t.Fatalf("SIGTERM: %v", err)
	}
	r := t.await(a, "GET /sleep?ms=1000 (in flight at SIGTERM)")
	if m := t.JSON(r, 200); m["slept_ms"] != 1000.0 {
		t.Fatalf("%s: got %v; want slept_ms 1000", t.lastReq(), m)
	}
	if !r.Close {
		t.Fatalf("%s: the response written during shutdown has no Connection: close (§9.4): %s", t.lastReq(), r)
	}
	code, err := w.Wait(t.ctx)
	if err != nil {
		t.Fatalf("after SIGTERM: %v", err)
	}
	if code != 0 {
		t.Fatalf("the watchdog exited with %s after SIGTERM; want exit status 0 (§9.4)", w.ExitString())
	}
}

// sigtermGraceOver: §9.4 — with -workers 1 -shutdown_timeout 1s, a request
// sleeping 5 s and one queued behind it are both answered 503 unavailable
// with Connection: close when the grace period ends, not cut off bare, and
// the watchdog exits 0.
func sigtermGraceOver(t *T) {
	w := t.StartWatchdog([]string{"-workers", "1", "-shutdown_timeout", "1s"}, nil, true)
	// §2.5: with L lanes, L requests sleep (one per lane) before one queues.
	l := t.lanesPerWorker(1)
	type pend struct {
		ch   <-chan *Resp
		what string
		id   string
	}
	var all []pend
	for range l {
		id := rid("cutinflight")
		all = append(all, pend{t.background("/sleep?ms=5000", id), "GET /sleep?ms=5000 (in flight at SIGTERM, past -shutdown_timeout 1s)", id})
	}
	t.waitLanesBusy(l)
	queued := rid("cutqueued")
	all = append(all, pend{t.background("/echo", queued), "GET /echo (queued behind it)", queued})
	t.Eventually("one request queued", func() (bool, string) {
		q := t.Metric("afterburn_queue_depth")
		return q == 1, fmt.Sprintf("queue depth %v", q)
	})
	signalled := time.Now()
	if err := w.Signal(syscall.SIGTERM); err != nil {
		t.Fatalf("SIGTERM: %v", err)
	}
	for _, c := range all {
		r := t.await(c.ch, c.what)
		eb := t.WatchdogError(r, 503, "unavailable")
		if !r.Close {
			t.Fatalf("%s: the 503 has no Connection: close (§9.4)\ngot response: %s", c.what, r)
		}
		if eb.RequestID != c.id {
			t.Fatalf("%s: the 503's request_id is %q; want the request's own %q (§5.1)", c.what, eb.RequestID, c.id)
		}
	}
	if took := time.Since(signalled); took < 900*time.Millisecond || took > 4*time.Second {
		t.Fatalf("the requests were answered %v after SIGTERM; want when -shutdown_timeout 1s ends (§9.4)", took)
	}
	code, err := w.Wait(t.ctx)
	if err != nil {
		t.Fatalf("after SIGTERM: %v", err)
	}
	if code != 0 {
		t.Fatalf("the watchdog exited with %s after SIGTERM; want exit status 0 (§9.4)", w.ExitString())
	}
}

func pdeathsig(t *T) {
	w := t.StartWatchdog([]string{"-workers", "2"}, nil, true)
	t.WaitIdle(2)
	ws := t.Workers()
	if len(ws) != 2 {
		t.Fatalf("the watchdog has %d child processes %v; want its 2 workers", len(ws), ws)
	}
	t.Cleanup(func() {
		for _, p := range ws {
			if alive(p) {
				syscall.Kill(p, syscall.SIGKILL) // our watchdog's worker, left behind
			}
		}
	})
	if err := w.Signal(syscall.SIGKILL); err != nil {
		t.Fatalf("SIGKILL: %v", err)
	}
	t.Eventually("the workers to die with the watchdog", func() (bool, string) {
		var left []int
		for _, p := range ws {
			if alive(p) {
				left = append(left, p)
			}
		}
		return len(left) == 0, fmt.Sprintf("still alive: %v", left)
	})
}

// ---- default group: queueing

// concurrentQueue: with K lanes per worker (§2.5) 2K of the sixteen run at once and the rest
// queue (§10.3) until a lane is free; each still gets its own response.
func concurrentQueue(t *T) {
	echoesOwnIDs(t, 16)
}

// sigtermUnderLoad: §9.4 — SIGTERM with two requests running and six queued loses none of
// them: all eight complete with their own responses within the grace period, and the watchdog
// exits 0.
func sigtermUnderLoad(t *T) {
	w := t.StartWatchdog([]string{"-workers", "2", "-shutdown_timeout", "10s"}, nil, true)
	t.WaitIdle(2)
	// §2.5: with L lanes per worker, 2L run at once and only the rest queue.
	running := min(8, 2*t.lanesPerWorker(2))
	var pending []<-chan *Resp
	var ids []string
	for i := range 8 {
		id := rid(fmt.Sprintf("drain%d", i))
		ids = append(ids, id)
		pending = append(pending, t.background("/sleep?ms=400", id))
	}
	t.Eventually(fmt.Sprintf("%d requests running and %d queued", running, 8-running), func() (bool, string) {
		q := t.Metric("afterburn_queue_depth")
		f := t.Metric("afterburn_requests_in_flight")
		return q == float64(8-running) && f == 8, fmt.Sprintf("queue depth %v, in flight %v", q, f)
	})
	if err := w.Signal(syscall.SIGTERM); err != nil {
		t.Fatalf("SIGTERM: %v", err)
	}
	for i, ch := range pending {
		r := t.await(ch, fmt.Sprintf("GET /sleep?ms=400 (%s, in flight or queued at SIGTERM)", ids[i]))
		if m := t.JSON(r, 200); m["slept_ms"] != 400.0 {
			t.Fatalf("%s: got %v; want slept_ms 400", t.lastReq(), m)
		}
		if got := r.Header.Get("AfterBurn-Request-Id"); got != ids[i] {
			t.Fatalf("%s: AfterBurn-Request-Id %q; want %q", t.lastReq(), got, ids[i])
		}
	}
	code, err := w.Wait(t.ctx)
	if err != nil {
		t.Fatalf("after SIGTERM: %v", err)
	}
	if code != 0 {
		t.Fatalf("the watchdog exited with %s after SIGTERM; want exit status 0 (§9.4)", w.ExitString())
	}
}
