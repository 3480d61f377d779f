package e2e

import (
	"fmt"
	"os"
	"regexp"
	"strings"
	"time"
)

// The lanes group: PROTOCOL.md §2.5, several exchanges in flight on one worker, each on a pair
// of pipes of its own. Each check starts a watchdog of its own with -lanes and is skipped when
// the library is served on fewer lanes than it needs (no streams, or AfterBurn-Streams lower).

// startLanes starts the check's watchdog with flags (which set -workers n and -lanes) and
// returns L, the lanes each worker is served on, skipping the check below min.
func (t *T) startLanes(n, min int, flags ...string) int {
	if t.cfg.forking() {
		t.Skipf("lanes > 1 with spawn=fork is refused at start-up in this version (§2.5)")
	}
	if t.cfg.oneLane {
		t.Skipf("the library is served on one lane (it does not list streams, or states AfterBurn-Streams: 1; §2.5)")
	}
	for i, f := range flags {
		if f == "-lanes" && i+1 < len(flags) {
			fmt.Sscan(flags[i+1], &t.ownLanes)
		}
	}
	t.StartWatchdog(flags, nil, true)
	if t.lanesPerWorker(n) == 1 {
		t.cfg.oneLane = true
	}
	return t.needLanes(n, min)
}

// lanesOverlap: §2.5 — four slow exchanges on one worker run at once, one per lane: four
// /sleep?ms=500 end together, well before the 2 s they would take one after another, and
// the same process serves them (no worker was added or replaced).
func lanesOverlap(t *T) {
	t.startLanes(1, 4, "-workers", "1", "-lanes", "4")
	pid := t.whoami(t.Get("/whoami")).Pid
	start := time.Now()
	var pending []<-chan *Resp
	for i := range 4 {
		pending = append(pending, t.background("/sleep?ms=500", rid(fmt.Sprintf("overlap%d", i))))
	}
	for _, ch := range pending {
		if m := t.JSON(t.await(ch, "GET /sleep?ms=500"), 200); m["slept_ms"] != 500.0 {
			t.Fatalf("%s: got %v; want slept_ms 500", t.lastReq(), m)
		}
	}
	if took := time.Since(start); took > 1400*time.Millisecond {
		t.Fatalf("four /sleep?ms=500 on one worker with four lanes took %v; want them at once, well under 2 s (§2.5: one exchange per lane, lanes independent)", took)
	}
	w := t.whoami(t.Get("/whoami"))
	if w.Pid != pid {
		t.Fatalf("/whoami before was pid %d, after %d; want one worker serving all four (§2.5)", pid, w.Pid)
	}
	if w.Requests != 6 {
		t.Fatalf("pid %d counted %d requests; want 6: /whoami, four /sleep, /whoami, all on that one process", pid, w.Requests)
	}
}

// lanesCrashFailsOnlyItsOwn: §2.5 "Faults confined to a lane", §8.4 — with two workers of
// three lanes, four /wait-cancel are spread two per worker (dispatch: the worker with the
// fewest busy lanes); a /crash on a free lane kills one worker, which fails exactly its two
// exchanges in flight, each with its own 502 worker_crashed; the other worker's two finish.
func lanesCrashFailsOnlyItsOwn(t *T) {
	t.startLanes(2, 3, "-workers", "2", "-lanes", "3")
	before := t.Restarts("crashed")
	ids := map[string]<-chan *Resp{}
	for i := range 4 {
		id := rid(fmt.Sprintf("inflight%d", i))
		ids[id] = t.background("/wait-cancel?ms=3000", id)
	}
	t.waitLanesBusy(4)
	// A round trip on a free lane gives each library time to read its lanes: a request that
	// its worker never read would legitimately go to another worker (§9.3).
	t.whoami(t.Get("/whoami"))
	t.WaitLanes("four busy lanes, two free", func(l LaneCounts) bool { return l.Busy == 4 && l.Free == 2 })
	crashID := rid("crash")
	if eb := t.WatchdogError(t.Get("/crash", "X-Request-Id: "+crashID), 502, "worker_crashed"); eb.RequestID != crashID {
		t.Fatalf("%s: error body request_id %q; want %q", t.lastReq(), eb.RequestID, crashID)
	}
	var crashed, finished []string
	for id, ch := range ids {
		r := t.await(ch, "GET /wait-cancel?ms=3000 (X-Request-Id: "+id+")")
		switch r.StatusCode {
		case 502:
			if eb := t.WatchdogError(r, 502, "worker_crashed"); eb.RequestID != id {
				t.Fatalf("%s: error body request_id %q; want its own %q", t.lastReq(), eb.RequestID, id)
			}
			crashed = append(crashed, id)
		case 200:
			if m := t.JSON(r, 200); m["cancelled"] != false {
				t.Fatalf("%s: got %v; want cancelled false", t.lastReq(), m)
			}
			finished = append(finished, id)
		default:
			t.Fatalf("%s: got %s; want 502 worker_crashed (on the crashed worker) or 200", t.lastReq(), r)
		}
	}
	if len(crashed) != 2 || len(finished) != 2 {
		t.Fatalf("of four exchanges spread over two workers, %d got 502 worker_crashed %v and %d finished %v; want exactly the crashed worker's two to fail (§2.5)", len(crashed), crashed, len(finished), finished)
	}
	t.WaitMetric(before+1, "afterburn_worker_restarts_total", "reason", "crashed")
	t.WaitIdle(2)
	echoesOwnIDs(t, 4)
	if got := t.Restarts("crashed"); got != before+1 {
		t.Fatalf("restarts{reason=crashed} %v; want %v: one crash, one restart", got, before+1)
	}
}

// lanesDeadlineCancel: §2.5 "Cancellation", "At the deadline" — an exchange past its deadline
// gets 504, its token goes down the cancel pipe and the library cancels it (the fixture logs
// "cancelled <id>"); the lane drains the late response, which reaches no client; the worker
// is not replaced and an exchange on another lane is undisturbed.
//
// The library's own deadline (§5.2: "now + AfterBurn-Timeout-Ms", rounded down, SHOULD fire a
// cancellation) can end the handler a moment before the watchdog's: its {"cancelled": true}
// then arrives in time as a 200, which is right too. So three run at once, and every 504
// must match one cancellation written and one late response discarded.
func lanesDeadlineCancel(t *T) {
	t.startLanes(1, 4, "-workers", "1", "-lanes", "4", "-exec_timeout", "500ms")
	pid := t.whoami(t.Get("/whoami")).Pid
	restarts := t.Metrics().Sum("afterburn_worker_restarts_total")
	cancels := t.Metric("afterburn_lane_cancels_total")
	late := t.Metric("afterburn_late_responses_discarded_total")
	from := t.WD.Log.Len()
	victims := map[string]<-chan *Resp{}
	for i := range 3 {
		id := rid(fmt.Sprintf("cancelme%d", i))
		victims[id] = t.background("/wait-cancel?ms=5000", id)
	}
	t.waitLanesBusy(3)
	other := t.background("/sleep?ms=300", rid("neighbour"))
	timedOut := 0
	for id, ch := range victims {
		r := t.await(ch, "GET /wait-cancel?ms=5000 (X-Request-Id: "+id+")")
		if r.StatusCode == 200 {
			if m := t.JSON(r, 200); m["cancelled"] != true {
				t.Fatalf("%s: got %v; want 504, or cancelled true at the library's own deadline (§5.2)", t.lastReq(), m)
			}
		} else if eb := t.WatchdogError(r, 504, "timeout"); eb.RequestID != id {
			t.Fatalf("%s: error body request_id %q; want %q", t.lastReq(), eb.RequestID, id)
		} else {
			timedOut++
		}
		if r.Elapsed > 2*time.Second {
			t.Fatalf("%s: the answer came after %v; want it at exec_timeout (500ms)", t.lastReq(), r.Elapsed)
		}
		t.LogWait(from, regexp.MustCompile(`cancelled `+regexp.QuoteMeta(id)))
	}
	// Sent at once, while lanes may still drain: each gets its own answer (§2.5).
	echoesOwnIDs(t, 4)
	if m := t.JSON(t.await(other, "GET /sleep?ms=300 (on another lane)"), 200); m["slept_ms"] != 300.0 {
		t.Fatalf("%s: got %v; want slept_ms 300", t.lastReq(), m)
	}
	t.WaitMetric(cancels+float64(timedOut), "afterburn_lane_cancels_total")
	t.WaitMetric(late+float64(timedOut), "afterburn_late_responses_discarded_total")
	m := t.Metrics()
	if c, _ := m.Get("afterburn_lane_cancels_total"); c != cancels+float64(timedOut) {
		t.Fatalf("afterburn_lane_cancels_total went from %v to %v; want one per 504 (%d)", cancels, c, timedOut)
	}
	if d, _ := m.Get("afterburn_late_responses_discarded_total"); d != late+float64(timedOut) {
		t.Fatalf("afterburn_late_responses_discarded_total went from %v to %v; want one per 504 (%d)", late, d, timedOut)
	}
	echoesOwnIDs(t, 4)
	if w := t.whoami(t.Get("/whoami")); w.Pid != pid {
		t.Fatalf("/whoami: pid %d; want the same worker %d: a cancelled exchange does not replace its worker (§2.5, §8.6)", w.Pid, pid)
	}
	if now := m.Sum("afterburn_worker_restarts_total"); now != restarts {
		t.Fatalf("worker restarts went from %v to %v; want none (§2.5)", restarts, now)
	}
}

// lanesIgnoredCancelStuck: §2.5 "At the deadline", "Faults confined to a lane" — a handler
// that ignores its cancellation leaves its lane draining past cancel_grace: the lane is stuck
// and the worker is retired make-before-break (restart reason stuck); an exchange on another
// lane of that worker, started before, finishes with its own 200.
func lanesIgnoredCancelStuck(t *T) {
	t.startLanes(1, 2, "-workers", "1", "-lanes", "4", "-exec_timeout", "1s", "-cancel_grace", "300ms")
	pid := t.whoami(t.Get("/whoami")).Pid
	before := t.Restarts("stuck")
	id := rid("ignore")
	r := t.Get("/ignore-cancel?ms=60000", "X-Request-Id: "+id)
	if eb := t.WatchdogError(r, 504, "timeout"); eb.RequestID != id {
		t.Fatalf("%s: error body request_id %q; want %q", t.lastReq(), eb.RequestID, id)
	}
	// The lane drains for cancel_grace (300ms); this one runs past that on another lane.
	other := t.background("/sleep?ms=700", rid("neighbour"))
	t.WaitLanes("one lane busy beside the draining one", func(l LaneCounts) bool { return l.Busy+l.Draining >= 2 })
	t.WaitMetric(before+1, "afterburn_worker_restarts_total", "reason", "stuck")
	if m := t.JSON(t.await(other, "GET /sleep?ms=700 (on another lane of the retired worker)"), 200); m["slept_ms"] != 700.0 {
		t.Fatalf("%s: got %v; want slept_ms 700", t.lastReq(), m)
	}
	t.WaitIdle(1)
	if w := t.whoami(t.Get("/whoami")); w.Pid == pid {
		t.Fatalf("/whoami: still pid %d; want its successor: a stuck lane retires the worker (§2.5)", pid)
	}
	echoesOwnIDs(t, 4)
}

// lanesSlowReader: §2.5 — a client that does not read its large response fills its own
// lane's pipe (response_buffering off) and stalls its own handler, not the other lanes.
func lanesSlowReader(t *T) {
	t.startLanes(1, 2, "-workers", "1", "-lanes", "4", "-response_buffering=false")
	rc := t.Dial()
	rc.Send("GET /large?size=67108864 HTTP/1.1\r\nHost: fn\r\n\r\n")
	t.waitLanesBusy(1)
	for i := range 8 {
		id := rid(fmt.Sprintf("beside%d", i))
		r := t.Post("/echo/"+id, []byte("body-"+id), "X-Request-Id: "+id)
		checkOwnEcho(t, loadResult{id, r, nil})
		if r.Elapsed > time.Second {
			t.Fatalf("%s: took %v beside a client not reading its 64 MiB response; want it unaffected (§2.5)", t.lastReq(), r.Elapsed)
		}
	}
	t.WaitLanes("the unread response still holding its lane", func(l LaneCounts) bool { return l.Busy == 1 })
	rc.Close()
}

// lanesLogAttributable: §2.5 "Serving" (SHOULD) — a line written through the library's
// per-request logger carries the request id, so it is attributable with several in flight.
func lanesLogAttributable(t *T) {
	t.startLanes(1, 2, "-workers", "1", "-lanes", "4")
	from := t.WD.Log.Len()
	id, text := rid("logged"), rid("text")
	if m := t.JSON(t.Get("/log?text="+text, "X-Request-Id: "+id), 200); m["logged"] != true {
		t.Fatalf("%s: got %v; want logged true", t.lastReq(), m)
	}
	x := regexp.QuoteMeta(text)
	line := t.LogWait(from, regexp.MustCompile(`(?m)^.*`+x+`.*$`))[0]
	if !strings.Contains(line, id) {
		t.Fatalf("the logged line %q does not carry the request id %q (§2.5)", line, id)
	}
}

// lanesReadyMetrics: §2.5, §9.2, §10.4 — /_/ready has the lane counts by state, and /metrics
// the lane series: afterburn_lanes{state}, afterburn_lane_cancels_total and
// afterburn_late_responses_discarded_total.
func lanesReadyMetrics(t *T) {
	l := t.startLanes(2, 2, "-workers", "2", "-lanes", "4")
	t.WaitLanes(fmt.Sprintf("%d free lanes", 2*l), func(c LaneCounts) bool { return c.Free == 2*l && c.Busy == 0 && c.Draining == 0 })
	held := t.background("/sleep?ms=800", rid("held"))
	t.WaitLanes("one busy lane", func(c LaneCounts) bool { return c.Busy == 1 && c.Free == 2*l-1 })
	t.Eventually("afterburn_lanes{state=busy} 1", func() (bool, string) {
		m := t.Metrics()
		free, okF := m.Get("afterburn_lanes", "state", "free")
		busy, okB := m.Get("afterburn_lanes", "state", "busy")
		drain, okD := m.Get("afterburn_lanes", "state", "draining")
		return okF && okB && okD && busy == 1 && free == float64(2*l-1) && drain == 0,
			fmt.Sprintf("free %v (%v), busy %v (%v), draining %v (%v)", free, okF, busy, okB, drain, okD)
	})
	m := t.Metrics()
	for _, name := range []string{"afterburn_lane_cancels_total", "afterburn_late_responses_discarded_total"} {
		if _, ok := m.Get(name); !ok {
			t.Fatalf("/metrics has no %s (§10.4)", name)
		}
	}
	t.JSON(t.await(held, "GET /sleep?ms=800"), 200)
}

// The variables of lanes given (lanes = K) and of lanes offered (lanes=auto), §2.3, §2.5.
var laneVars = []string{"AFTERBURN_STREAM_FDS", "AFTERBURN_STREAM_CANCEL_FD", "AFTERBURN_STREAM_OFFER_FDS", "AFTERBURN_STREAM_OFFER_CANCEL_FD"}

// autoOffer is K of an offer before any worker answered one (§2.5 "Offered lanes").
const autoOffer = 16

// lanesAuto: §2.5 "Offered lanes", §10.2 — under lanes=auto, the default, the first worker is
// offered 16 lanes in AFTERBURN_STREAM_OFFER_FDS (never AFTERBURN_STREAM_FDS: a library that
// does not read the offer sees no lanes) and is served on L of them, what its library prefers
// (1 for one that states no preference); a library served on L > 1 carries L exchanges at
// once; the worker's successor is offered exactly L, and with
// L = 1 gets no lane variable at all. Under spawn=fork, auto is one lane and no offer.
func lanesAuto(t *T) {
	if t.cfg.isolated() {
		t.Skipf("under isolation=request every request is a fresh fork: auto is one lane there, and /crash is every worker's end (§2.7)")
	}
	if _, err := os.Stat("/proc/self/environ"); err != nil {
		t.Skipf("needs /proc to read a worker's environment and descriptors: %v", err)
	}
	t.StartWatchdog([]string{"-workers", "1", "-lanes", "auto"}, nil, true)
	t.WaitIdle(1)
	l := 1
	if _, st := t.ReadyStatus(); st.Lanes != nil {
		l = st.Lanes.Total()
	}
	first := t.whoami(t.Get("/whoami"))
	env := t.environ(first.Pid)
	if t.cfg.forking() {
		for _, v := range laneVars {
			if got, ok := env[v]; ok {
				t.Fatalf("pid %d, forked under spawn=fork, has %s=%q; want no lane variable: auto is one lane where lanes cannot be given (§2.5)", first.Pid, v, got)
			}
		}
		if l != 1 {
			t.Fatalf("/_/ready shows %d lanes for one worker under spawn=fork; want 1 (§2.5)", l)
		}
		return
	}
	for _, v := range laneVars[:2] {
		if got, ok := env[v]; ok {
			t.Fatalf("pid %d has %s=%q under lanes=auto; want the offer's variables only: a library that does not read them must see no lanes (§2.5 \"Offered lanes\")", first.Pid, v, got)
		}
	}
	offered := strings.Split(env["AFTERBURN_STREAM_OFFER_FDS"], ",")
	if len(offered) != 2*(autoOffer-1) || env["AFTERBURN_STREAM_OFFER_CANCEL_FD"] == "" {
		t.Fatalf("the first worker's offer: AFTERBURN_STREAM_OFFER_FDS=%q AFTERBURN_STREAM_OFFER_CANCEL_FD=%q; want lanes 2 to %d and a cancel pipe (§2.5)",
			env["AFTERBURN_STREAM_OFFER_FDS"], env["AFTERBURN_STREAM_OFFER_CANCEL_FD"], autoOffer)
	}
	if l > 1 {
		// (That the library closed lanes L + 1 to K is not told from here: it may have
		// reused their numbers already. Each library's own tests check it.)
		n := min(l, 4)
		start := time.Now()
		var pending []<-chan *Resp
		for i := range n {
			pending = append(pending, t.background("/sleep?ms=500", rid(fmt.Sprintf("auto%d", i))))
		}
		for _, ch := range pending {
			t.JSON(t.await(ch, "GET /sleep?ms=500"), 200)
		}
		if took := time.Since(start); took > 1400*time.Millisecond {
			t.Fatalf("%d /sleep?ms=500 on one worker served on %d lanes took %v; want them at once (§2.5)", n, l, took)
		}
	}
	// The successor is offered what the first worker serves.
	t.Get("/crash")
	var next whoami
	t.Eventually("a successor worker", func() (bool, string) {
		code, st, body, err := t.WD.status(t.ctx, "/_/ready")
		if err != nil || code != 200 || st.Idle == nil || *st.Idle != 1 {
			return false, fmt.Sprintf("%d %q %v", code, body, err)
		}
		next = t.whoami(t.Get("/whoami"))
		return next.Pid != first.Pid, fmt.Sprintf("pid %d", next.Pid)
	})
	env = t.environ(next.Pid)
	if l == 1 {
		for _, v := range laneVars {
			if got, ok := env[v]; ok {
				t.Fatalf("the successor (pid %d) of a worker served on one lane has %s=%q; want no lane variable: it is offered what the first serves, and one lane is no offer (§2.5)", next.Pid, v, got)
			}
		}
		return
	}
	if got := strings.Split(env["AFTERBURN_STREAM_OFFER_FDS"], ","); len(got) != 2*(l-1) {
		t.Fatalf("the successor (pid %d) was offered AFTERBURN_STREAM_OFFER_FDS=%q; want exactly lanes 2 to %d, what the first worker serves (§2.5)", next.Pid, env["AFTERBURN_STREAM_OFFER_FDS"], l)
	}
}

// environ is the environment pid was started with (/proc/PID/environ).
func (t *T) environ(pid int) map[string]string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
	if err != nil {
		t.Fatalf("reading the environment of pid %d: %v", pid, err)
	}
	env := map[string]string{}
	for _, kv := range strings.Split(string(b), "\x00") {
		if k, v, ok := strings.Cut(kv, "="); ok {
			env[k] = v
		}
	}
	return env
}
