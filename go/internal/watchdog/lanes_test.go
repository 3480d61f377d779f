package watchdog

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/afterburn-dev/afterburn/go/internal/watchdog/config"
	"github.com/afterburn-dev/afterburn/go/internal/watchdog/pool"
	"github.com/afterburn-dev/afterburn/go/internal/watchdog/wire"
	"github.com/afterburn-dev/afterburn/go/internal/watchdog/worker"
	dto "github.com/prometheus/client_model/go"
)

// startLanes runs a watchdog over the lane child (lanechild_test.go) with
// lanes lanes per worker, the child stating stated.
func startLanes(t *testing.T, lanes int, stated string, mut func(*config.Config), childEnv ...string) *harness {
	t.Helper()
	return start(t, func(c *config.Config) {
		c.Lanes = lanes
		c.CancelGrace = 5 * time.Second
		if mut != nil {
			mut(c)
		}
	}, append([]string{"AFTERBURN_TEST_CHILD=lanes", "AFTERBURN_TEST_STREAMS=" + stated}, childEnv...)...)
}

func (h *harness) waitLanes(what string, cond func(c pool.LaneCounts) bool) {
	h.t.Helper()
	h.waitState(what, func(st pool.Status, ready bool) bool { return st.Lanes != nil && cond(*st.Lanes) })
}

// pidOf is the pid a lane child's answer names.
func pidOf(body string) string {
	_, pid, _ := strings.Cut(body, " pid ")
	return pid
}

func TestLanesInUse(t *testing.T) {
	for _, c := range []struct {
		k       int
		streams bool
		n       string
		want    int
	}{
		{1, true, "8", 1}, {4, true, "8", 4}, {4, true, "2", 2}, {4, false, "8", 1},
		{4, true, "", 1}, {4, true, "0", 1}, {4, true, "-3", 1}, {4, true, "x", 1},
		{4, true, " 2", 1}, {4, true, "99999999999", 1},
	} {
		if got := worker.LanesInUse(c.k, c.streams, c.n); got != c.want {
			t.Errorf("lanesInUse(%d, %v, %q) = %d; want %d", c.k, c.streams, c.n, got, c.want)
		}
	}
}

func TestLanesConfigRefused(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-lanes", "0", "--", "x"}, "bad lanes"},
		{[]string{"-lanes", "257", "--", "x"}, "bad lanes"},
		{[]string{"-lanes", "4", "-stdio", "--", "x"}, "needs fd mode"},
		{[]string{"-lanes", "4", "-handshake=false", "--", "x"}, "needs the handshake"},
		{[]string{"-lanes", "4", "-spawn", "fork", "--", "x"}, "spawn=fork is not supported"},
		{[]string{"-cancel_grace", "0", "--", "x"}, "bad cancel_grace"},
	} {
		_, err := config.ParseConfig(c.args, func(string) string { return "" }, nil)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: error %v; want one containing %q", c.args, err, c.want)
		}
	}
}

// PROTOCOL.md §2.5: four exchanges on one worker run at once, each on a lane
// of its own.
func TestLanesOverlap(t *testing.T) {
	h := startLanes(t, 4, "64", nil)
	h.waitLanes("4 free lanes", func(c pool.LaneCounts) bool { return c.Free == 4 })
	start := time.Now()
	var got []<-chan string
	for range 4 {
		got = append(got, h.getLater("/sleep?ms=400"))
	}
	lanes, pids := map[string]bool{}, map[string]bool{}
	for _, ch := range got {
		r := <-ch
		if !strings.HasPrefix(r, "200 slept lane ") {
			t.Fatalf("got %q", r)
		}
		lanes[strings.Fields(r)[3]] = true
		pids[pidOf(r)] = true
	}
	// Structural, not a speed target: one after another would take 1.6 s.
	if d := time.Since(start); d > 1200*time.Millisecond {
		t.Errorf("four 400 ms sleeps on four lanes took %v", d)
	}
	if len(lanes) != 4 || len(pids) != 1 {
		t.Errorf("lanes %v, pids %v; want 4 lanes of one worker", lanes, pids)
	}
}

// PROTOCOL.md §2.5: a library that states fewer lanes than asked serves
// that many; one that does not list streams serves one.
func TestLanesLibraryStatesFewer(t *testing.T) {
	h := startLanes(t, 4, "2", nil)
	h.waitLanes("2 free lanes", func(c pool.LaneCounts) bool { return c.Free == 2 })
	h.logs.waitContains(t, "the library serves 2 lane(s) where lanes=4 asks for 4")
	h2 := startLanes(t, 4, "none", nil)
	h2.waitLanes("1 free lane", func(c pool.LaneCounts) bool { return c.Free == 1 })
	resp, body := h2.Get("/lane")
	wantBody(t, resp, body, 200, "lane 1 pid "+pidOf(body))
}

// PROTOCOL.md §2.5: at a lane's deadline the client gets 504, the library is
// asked to cancel, and the late response is drained: the worker lives on
// and another lane's exchange is undisturbed.
func TestLaneDeadlineCancelsAndDrains(t *testing.T) {
	h := startLanes(t, 2, "64", func(c *config.Config) { c.ExecTimeout = 300 * time.Millisecond })
	h.waitLanes("2 free lanes", func(c pool.LaneCounts) bool { return c.Free == 2 })
	_, before := h.Get("/lane")
	other := h.getLater("/sleep?ms=100")
	resp, body := h.Get("/sleep?ms=10000")
	wantError(t, resp, body, 504, wire.ErrTimeout)
	if r := <-other; !strings.HasPrefix(r, "200 slept") {
		t.Fatalf("the other lane's exchange got %q", r)
	}
	h.logs.waitContains(t, "child: cancelled ")
	h.waitLanes("the lane drained", func(c pool.LaneCounts) bool { return c.Free == 2 && c.Draining == 0 })
	if n := metricValue(t, h.wd.m.LateDiscarded); n != 1 {
		t.Errorf("late responses discarded %v; want 1", n)
	}
	if n := metricValue(t, h.wd.m.LaneCancels); n != 1 {
		t.Errorf("cancellations %v; want 1", n)
	}
	for range 4 {
		resp, body = h.Get("/lane")
		if resp.StatusCode != 200 || pidOf(body) != pidOf(before) {
			t.Fatalf("after the drain got %d %q; want the same worker, pid %s", resp.StatusCode, body, pidOf(before))
		}
	}
	if n := counter(t, h.wd.m.Restarts, "timeout"); n != 0 {
		t.Errorf("restarts{timeout} %v; want 0: a late response is not a fault", n)
	}
}

// PROTOCOL.md §2.5: a handler that ignores its cancellation leaves its lane
// stuck after cancel_grace; the worker is replaced make-before-break: its
// other exchange finishes, then it is killed.
func TestLaneStuckReplacesWorkerMakeBeforeBreak(t *testing.T) {
	h := startLanes(t, 2, "64", func(c *config.Config) {
		c.ExecTimeout = 1500 * time.Millisecond
		c.CancelGrace = 200 * time.Millisecond
	})
	h.waitLanes("2 free lanes", func(c pool.LaneCounts) bool { return c.Free == 2 })
	_, before := h.Get("/lane")
	slow := h.getLater("/sleep?ms=1200")
	h.waitLanes("one busy lane", func(c pool.LaneCounts) bool { return c.Busy == 1 })
	resp, body := h.Get("/ignore?ms=60000")
	wantError(t, resp, body, 504, wire.ErrTimeout)
	h.logs.waitContains(t, "did not end within cancel_grace")
	if r := <-slow; !strings.HasPrefix(r, "200 slept") || pidOf(r) != pidOf(before) {
		t.Fatalf("the other exchange of the stuck worker got %q; want 200 from pid %s", r, pidOf(before))
	}
	h.logs.waitContains(t, "pid "+pidOf(before)+" replaced: stuck (")
	resp, body = h.Get("/lane")
	if resp.StatusCode != 200 || pidOf(body) == pidOf(before) {
		t.Fatalf("after the replacement got %d %q; want a new worker", resp.StatusCode, body)
	}
	if n := counter(t, h.wd.m.Restarts, "stuck"); n != 1 {
		t.Errorf("restarts{stuck} %v; want 1", n)
	}
}

// PROTOCOL.md §2.5, §8.4: a worker's crash fails exactly the exchanges in
// flight on its lanes, each with its own 502, and nothing else.
func TestLaneCrashFailsOnlyItsExchanges(t *testing.T) {
	h := startLanes(t, 3, "64", func(c *config.Config) { c.Workers = 2 })
	h.waitLanes("6 free lanes", func(c pool.LaneCounts) bool { return c.Free == 6 })
	var sleeps []<-chan string
	for range 4 {
		sleeps = append(sleeps, h.getLater("/sleep?ms=2500"))
	}
	h.waitLanes("4 busy lanes", func(c pool.LaneCounts) bool { return c.Busy == 4 })
	// Each read by its worker, so none can be retried elsewhere (§9.3).
	h.logs.waitCount(t, "child: lane", 4)
	resp, body := h.Get("/crash")
	wantError(t, resp, body, 502, wire.ErrWorkerCrashed)
	codes := map[string]int{}
	for _, ch := range sleeps {
		codes[(<-ch)[:3]]++
	}
	// Spread (§2.5): two on each worker, so the crash takes two with it.
	if codes["502"] != 2 || codes["200"] != 2 {
		t.Errorf("in-flight exchanges answered %v; want two 502 and two 200", codes)
	}
	if n := counter(t, h.wd.m.Restarts, "crashed"); n != 1 {
		t.Errorf("restarts{crashed} %v; want 1", n)
	}
}

// gatedLanes is one worker of two lanes whose successor, once started, waits
// at a FIFO gate (the test child's AFTERBURN_TEST_GATE) until openGate: its
// exit can then be handled before its successor is ready.
type gatedLanes struct {
	t      *testing.T
	h      *harness
	gate   string
	before string       // GET /lane's answer from the worker
	pid    int          // its process
	old    *pool.Member // and the pool's worker
}

func startGated(t *testing.T) *gatedLanes {
	t.Helper()
	g := &gatedLanes{t: t, gate: filepath.Join(t.TempDir(), "gate")}
	g.h = startLanes(t, 2, "64", nil, "AFTERBURN_TEST_GATE="+g.gate)
	g.h.waitLanes("2 free lanes", func(c pool.LaneCounts) bool { return c.Free == 2 })
	_, g.before = g.h.Get("/lane")
	var err error
	if g.pid, err = strconv.Atoi(pidOf(g.before)); err != nil {
		t.Fatalf("GET /lane: %q names no pid", g.before)
	}
	g.old = g.h.wd.pool.SlotWorker(1)
	if err := syscall.Mkfifo(g.gate, 0o600); err != nil {
		t.Fatal(err)
	}
	return g
}

// openGate lets the successor waiting at the gate go on.
func (g *gatedLanes) openGate() {
	g.t.Helper()
	open, err := os.OpenFile(g.gate, os.O_WRONLY, 0)
	if err != nil {
		g.t.Fatal(err)
	}
	open.Close()
}

// wantCrashedNotExited checks that the worker's restart was counted crashed.
func (g *gatedLanes) wantCrashedNotExited() {
	g.t.Helper()
	for reason, want := range map[string]float64{"crashed": 1, "exited": 0} {
		if n := counter(g.t, g.h.wd.m.Restarts, reason); n != want {
			g.t.Errorf("restarts{%s} %v; want %v", reason, n, want)
		}
	}
}

// PROTOCOL.md §2.5, §8.4: a killed worker whose exit shows later than
// exitGrace after its pipes ended is retired make-before-break for the lane
// that saw them end; when it exits before its successor is ready, the restart
// is still the crash, not an exit (kill-busy-worker with Java lanes, where a
// loaded machine delayed the exit of a killed JVM: restarts{crashed} never
// came). The child closes every lane at once and is killed only after its
// exchange's 502, while its successor waits at a gate.
func TestLaneCrashWithExitSeenLateCountsCrashed(t *testing.T) {
	g := startGated(t)
	h, pid := g.h, g.pid
	resp, body := h.Get("/close-all")
	wantError(t, resp, body, 502, wire.ErrWorkerCrashed)
	h.logs.waitContains(t, "crashed on lane") // the make-before-break path
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	// Its exit is handled (onExit) while the successor is still starting.
	waitOnExit(t, h.wd.pool, g.old)
	g.openGate()
	h.waitLanes("2 free lanes of the successor", func(c pool.LaneCounts) bool { return c.Free == 2 })
	g.wantCrashedNotExited()
}

// PROTOCOL.md §2.5, §8.4: the same with the hang-up first seen on a free
// lane, by the check before a dispatch (§9.6: reason exited), and the busy
// lane's exchange failing at the worker's end afterwards: the worker died
// busy, and the restart is the crash.
func TestLaneCrashAfterFreeLaneHangUpCountsCrashed(t *testing.T) {
	g := startGated(t)
	h, before, pid := g.h, g.before, g.pid
	busy := h.getLater("/sleep?ms=60000&close=others")
	h.logs.waitContains(t, " sleeping") // the other lanes are closed by then
	next := h.getLater("/lane")         // takes the free lane: its hang-up is seen
	h.logs.waitContains(t, "exited on lane")
	// Every lane ends, the process staying: the busy exchange fails.
	if err := syscall.Kill(pid, syscall.SIGUSR1); err != nil {
		t.Fatal(err)
	}
	if r := <-busy; !strings.HasPrefix(r, "502 ") || !strings.Contains(r, `"worker_crashed"`) {
		t.Fatalf("the busy exchange got %q; want 502 worker_crashed", r)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitOnExit(t, h.wd.pool, g.old)
	g.openGate()
	if r := <-next; !strings.HasPrefix(r, "200 lane ") || pidOf(r) == pidOf(before) {
		t.Fatalf("the request that found the hang-up got %q; want 200 from the successor", r)
	}
	g.wantCrashedNotExited()
}

// waitOnExit waits until the pool has handled w's exit (onExit runs on its
// own goroutine once w is reaped).
func waitOnExit(t *testing.T, p *pool.Pool, w *pool.Member) {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	select {
	case <-w.Exited:
	case <-time.After(waitLimit):
		t.Fatalf("pid %d was not reaped within %v", w.Pid, waitLimit)
	}
	for {
		if p.ExitHandled(w) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the exit of pid %d was never handled", w.Pid)
		}
		runtime.Gosched()
	}
}

// PROTOCOL.md §2.5: user code that closes its lane fails that exchange;
// the worker's other exchange finishes and the worker is replaced.
func TestLaneClosedByWorker(t *testing.T) {
	h := startLanes(t, 2, "64", nil)
	h.waitLanes("2 free lanes", func(c pool.LaneCounts) bool { return c.Free == 2 })
	_, before := h.Get("/lane")
	slow := h.getLater("/sleep?ms=800")
	h.waitLanes("one busy lane", func(c pool.LaneCounts) bool { return c.Busy == 1 })
	resp, body := h.Get("/close-lane")
	wantError(t, resp, body, 502, wire.ErrWorkerCrashed)
	if r := <-slow; !strings.HasPrefix(r, "200 slept") {
		t.Fatalf("the other exchange got %q", r)
	}
	h.logs.waitContains(t, "pid "+pidOf(before)+" replaced: crashed (")
	resp, body = h.Get("/lane")
	if resp.StatusCode != 200 || pidOf(body) == pidOf(before) {
		t.Fatalf("after the replacement got %d %q; want a new worker", resp.StatusCode, body)
	}
}

// PROTOCOL.md §9.2: a worker replaced make-before-break for a fault on one
// lane, its other lanes free, takes no new request while its successor
// starts, so /_/ready does not count it idle: its slot is starting until the
// successor is ready. (Counted idle, it let a conformance check see every
// worker idle and then count the replacement as a restart of its own.)
func TestLaneFaultedWorkerIsNotIdle(t *testing.T) {
	g := startGated(t)
	h := g.h
	resp, body := h.Get("/close-lane")
	wantError(t, resp, body, 502, wire.ErrWorkerCrashed)
	h.logs.waitContains(t, "crashed on lane") // the make-before-break path
	st, ready := h.wd.pool.Snapshot()
	if st.Idle != 0 || st.Starting != 1 || ready {
		t.Errorf("while the successor waits at its gate: %+v ready %v; want starting 1, idle 0, not ready", st, ready)
	}
	g.openGate()
	h.waitState("the successor idle", func(st pool.Status, ready bool) bool { return st.Idle == 1 && ready })
	if resp, body := h.Get("/lane"); resp.StatusCode != 200 || pidOf(body) == pidOf(g.before) {
		t.Fatalf("after the replacement got %d %q; want a new worker", resp.StatusCode, body)
	}
}

// PROTOCOL.md §2.5: a client that does not read its response fills its own
// lane's pipe only.
func TestLaneSlowReaderDoesNotStallOthers(t *testing.T) {
	h := startLanes(t, 2, "64", func(c *config.Config) { c.ResponseBuffering = false })
	h.waitLanes("2 free lanes", func(c pool.LaneCounts) bool { return c.Free == 2 })
	c, err := net.Dial("tcp", h.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.(*net.TCPConn).SetReadBuffer(4096)
	if _, err := c.Write([]byte("GET /big?size=33554432 HTTP/1.1\r\nHost: x\r\n\r\n")); err != nil {
		t.Fatal(err)
	}
	h.waitLanes("one busy lane", func(c pool.LaneCounts) bool { return c.Busy == 1 })
	for range 3 {
		resp, body := h.Get("/sleep?ms=1")
		if resp.StatusCode != 200 || !strings.HasPrefix(body, "slept lane ") {
			t.Fatalf("got %d %q", resp.StatusCode, body)
		}
	}
}

// PROTOCOL.md §2.5, §9.4: shutdown lets every lane's exchange finish, then
// the worker gets EOF on each lane and exits 0.
func TestLanesShutdownDrainsAll(t *testing.T) {
	h := startLanes(t, 3, "64", nil)
	h.waitLanes("3 free lanes", func(c pool.LaneCounts) bool { return c.Free == 3 })
	var got []<-chan string
	for range 3 {
		got = append(got, h.getLater("/sleep?ms=500"))
	}
	h.waitLanes("3 busy lanes", func(c pool.LaneCounts) bool { return c.Busy == 3 })
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); h.stop() }()
	for _, ch := range got {
		if r := <-ch; !strings.HasPrefix(r, "200 slept") {
			t.Errorf("in flight at shutdown: got %q", r)
		}
	}
	wg.Wait()
	h.logs.waitContains(t, "stopped: exit status 0")
}

func TestLanesMetricsAndReady(t *testing.T) {
	h := startLanes(t, 2, "64", nil)
	h.waitLanes("2 free lanes", func(c pool.LaneCounts) bool { return c.Free == 2 })
	req, _ := http.NewRequest("GET", h.url+"/_/ready", nil)
	_, body := h.do(req)
	if !strings.Contains(body, `"lanes":{"free":2,"busy":0,"draining":0}`) {
		t.Errorf("/_/ready %s; want the lane counts", body)
	}
	if v := h.wd.pool.LaneCounts().Get("free"); v != 2 {
		t.Errorf("afterburn_lanes{state=free} %d; want 2", v)
	}
}

func metricValue(t *testing.T, c interface{ Write(*dto.Metric) error }) float64 {
	t.Helper()
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}

// waitCount waits until the log holds n lines containing sub.
func (s *syncBuffer) waitCount(t *testing.T, sub string, n int) {
	t.Helper()
	s.waitText(t, fmt.Sprintf("with %d lines containing %q", n, sub), func(text string) bool {
		return strings.Count(text, sub) >= n
	})
}

// PROTOCOL.md §2.5, §9.3: requests sent at once after a worker exited
// following a complete response each get their own answer: one written to a
// lane of the dying worker and never read goes to another worker; one that
// another lane of the dying worker had read before it exited gets its own
// 502 (§8.4), never another request's answer; and most go through.
func TestLanesUnreadRequestRetried(t *testing.T) {
	h := startLanes(t, 4, "64", func(c *config.Config) { c.Workers = 2 })
	h.waitLanes("8 free lanes", func(c pool.LaneCounts) bool { return c.Free == 8 })
	for round := 1; round <= 20; round++ {
		resp, _ := h.Get("/exit-after")
		if resp.StatusCode != 200 {
			t.Fatalf("round %d: /exit-after got %d", round, resp.StatusCode)
		}
		a, b := h.getLater("/lane"), h.getLater("/lane")
		for _, ch := range []<-chan string{a, b} {
			r := <-ch
			switch {
			case strings.HasPrefix(r, "200 lane "):
			case strings.HasPrefix(r, "502 ") && strings.Contains(r, `"worker_crashed"`):
			default:
				t.Fatalf("round %d: a request right after a worker's exit got %q", round, r)
			}
		}
	}
	if strings.Count(h.logs.String(), "exited before reading request") == 0 {
		t.Errorf("no request of 20 rounds was retried on another worker (§9.3)")
	}
}

// PROTOCOL.md §2.5, §8.4: a worker that crashed with free lanes gives none
// of them to a later request: each is served by a live worker.
func TestLanesOfACrashedWorkerTakeNothing(t *testing.T) {
	h := startLanes(t, 4, "64", func(c *config.Config) { c.Workers = 2 })
	for round := 1; round <= 5; round++ {
		h.waitLanes("8 free lanes", func(c pool.LaneCounts) bool { return c.Free == 8 })
		resp, body := h.Get("/crash")
		wantError(t, resp, body, 502, wire.ErrWorkerCrashed)
		h.logs.waitCount(t, "replaced: crashed", round)
		a, b := h.getLater("/lane"), h.getLater("/lane")
		for _, ch := range []<-chan string{a, b} {
			if r := <-ch; !strings.HasPrefix(r, "200 lane ") {
				t.Fatalf("round %d: a request after the crash got %q", round, r)
			}
		}
	}
}
