package e2e

import (
	"errors"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"syscall"
)

// The checks of §2.7: one request per process. Each starts a watchdog of its own with
// -spawn fork -isolation request; a library that does not list fork is refused at start, and
// the check is skipped.

// isolatedPool starts a watchdog with isolation=request and n spares, and waits for them.
func isolatedPool(t *T, n int, flags ...string) {
	const refused = "the library does not list fork: isolation=request is refused at start (§2.7)"
	if t.cfg.noFork {
		t.Skipf(refused)
	}
	t.StartWatchdog(append([]string{"-workers", strconv.Itoa(n), "-spawn", "fork", "-isolation", "request"}, flags...), nil, false)
	if err := t.WD.WaitReady(t.ctx, n); err != nil {
		if t.WD.Exited() && strings.Contains(t.WD.Log.String(), "needs a library that can fork") {
			t.cfg.noFork = true
			t.Skipf(refused)
		}
		t.Fatalf("%v\n%s", err, t.WD.Tail())
	}
}

// state is the fixture's /state: the pid and what an earlier request of that process set.
func (t *T) state(r *Resp) (pid int, seen any) {
	m := t.JSON(r, 200)
	p, _ := m["pid"].(float64)
	return int(p), m["seen"]
}

// isolationGlobalSequential: §2.7 — on one keep-alive connection, a module global written by
// one request is not seen by the next: each is served by a fresh process.
func isolationGlobalSequential(t *T) {
	isolatedPool(t, 2)
	rc := t.Dial()
	pids := map[int]bool{}
	for i := range 4 {
		rc.Send(fmt.Sprintf("GET /state?set=written-by-%d HTTP/1.1\r\nHost: fn\r\n\r\n", i))
		r := rc.Read("GET /state")
		if r.Close {
			t.Fatalf("request %d: the watchdog closed a keep-alive connection: %s", i+1, r)
		}
		pid, seen := t.state(r)
		if seen != nil {
			t.Fatalf("request %d on one connection saw %v, a global an earlier request wrote (pid %d); want nothing (§2.7)", i+1, seen, pid)
		}
		if pids[pid] {
			t.Fatalf("request %d was served by pid %d, which served an earlier one; want a fresh process (§2.7)", i+1, pid)
		}
		pids[pid] = true
	}
}

// isolationWarmUpUnseen: §2.7 "Warm spares" — a library may run a synthetic request through
// its own path in a spare, but never through the function: under isolation=request every
// request is the first call of the function in its process, which /whoami counts.
func isolationWarmUpUnseen(t *T) {
	isolatedPool(t, 2)
	for i := range 4 {
		m := t.JSON(t.Get("/whoami"), 200)
		if n, _ := m["requests"].(float64); n != 1 {
			t.Fatalf("request %d: pid %v had called the function %v times, this request's call included; want 1: a warm-up must not reach the function (§2.7)", i+1, m["pid"], m["requests"])
		}
	}
}

// isolationGlobalConcurrent: §2.7 — four requests at once, each setting a global and holding
// it for a while, then four more: none sees another's, and eight processes served them.
func isolationGlobalConcurrent(t *T) {
	isolatedPool(t, 4)
	pids := map[int]bool{}
	for round := range 2 {
		var pending []<-chan *Resp
		for i := range 4 {
			id := rid(fmt.Sprintf("state%d-%d", round, i))
			pending = append(pending, t.background("/state?ms=300&set="+id, id))
		}
		for _, ch := range pending {
			pid, seen := t.state(t.await(ch, "GET /state?ms=300"))
			if seen != nil {
				t.Fatalf("%s: saw %v, written by another request; want nothing (§2.7)", t.lastReq(), seen)
			}
			if pids[pid] {
				t.Fatalf("%s: pid %d served two requests; want a fresh process each (§2.7)", t.lastReq(), pid)
			}
			pids[pid] = true
		}
	}
}

// isolationTmpdir: §2.7 — a request's TMPDIR is a directory of its own: a file one request
// writes there is not in the next request's, and the directory is removed once its worker is
// gone.
func isolationTmpdir(t *T) {
	isolatedPool(t, 2)
	first := t.JSON(t.Get("/tmpdir?write=left-behind"), 200)
	dir, _ := first["tmpdir"].(string)
	if dir == "" || dir == os.TempDir() {
		t.Fatalf("%s: TMPDIR %q; want a directory of the request's own (§2.7)", t.lastReq(), dir)
	}
	second := t.JSON(t.Get("/tmpdir"), 200)
	if d, _ := second["tmpdir"].(string); d == dir {
		t.Fatalf("%s: TMPDIR %q again; want another request's own directory", t.lastReq(), d)
	}
	if files, _ := second["files"].([]any); len(files) != 0 {
		t.Fatalf("%s: its TMPDIR holds %v; want it empty (§2.7)", t.lastReq(), files)
	}
	t.Eventually("the first request's TMPDIR removed", func() (bool, string) {
		_, err := os.Lstat(dir)
		return errors.Is(err, os.ErrNotExist), fmt.Sprintf("%s: %v", dir, err)
	})
}

// isolationRandom: §2.7 — two requests draw different random numbers.
func isolationRandom(t *T) {
	isolatedPool(t, 2)
	draws := map[string]bool{}
	for range 3 {
		m := t.JSON(t.Get("/random"), 200)
		v, _ := m["random"].(string)
		if v == "" || draws[v] {
			t.Fatalf("%s: drew %q, drawn before %v; want a different number per request (§2.7)", t.lastReq(), v, draws)
		}
		draws[v] = true
	}
}

// isolationFaultsCostOnlyTheirRequest: §2.7, §8.4, §8.6 — a crash and a timeout each fail only
// their own request; the requests before and after are answered.
func isolationFaultsCostOnlyTheirRequest(t *T) {
	isolatedPool(t, 2, "-exec_timeout", "700ms")
	echoesOwnIDs(t, 2)
	wantCrashed(t, "crash", func(id string) *Resp { return t.Get("/crash", "X-Request-Id: "+id) })
	echoesOwnIDs(t, 4)
	id := rid("timeout")
	if eb := t.WatchdogError(t.Get("/sleep?ms=5000", "X-Request-Id: "+id), 504, "timeout"); eb.RequestID != id {
		t.Fatalf("%s: error body request_id %q; want %q", t.lastReq(), eb.RequestID, id)
	}
	echoesOwnIDs(t, 4)
}

// isolationLeftoversReported: §2.7 — a process a request leaves behind, in a session of its
// own as a daemon, is reported in the log with the request id, counted and killed.
func isolationLeftoversReported(t *T) { leftBehindReported(t, "/spawn?session=1&ms=60000", "leaver") }

// isolationWorkerForksAndExits: §2.7 — a request starts a child in its worker's process group
// and returns; the worker exits after the exchange. The child, re-parented to the watchdog, is
// reported with the request id, counted and killed with the group.
func isolationWorkerForksAndExits(t *T) { leftBehindReported(t, "/spawn?ms=60000", "forker") }

// leftBehindReported serves one request on path, which leaves a process behind and answers its
// pid as "child", and waits for §2.7's account of it: a log line with the request id naming the
// pid, afterburn_isolation_leftovers_total one up, the process killed; then requests are
// answered as ever.
func leftBehindReported(t *T, path, label string) {
	isolatedPool(t, 1)
	before := t.Metric("afterburn_isolation_leftovers_total")
	from := t.WD.Log.Len()
	id := rid(label)
	m := t.JSON(t.Get(path, "X-Request-Id: "+id), 200)
	child, _ := m["child"].(float64)
	if child == 0 {
		t.Fatalf("%s: got %v; want the pid it started", t.lastReq(), m)
	}
	t.LogWait(from, regexp.MustCompile(`\(request `+regexp.QuoteMeta(id)+`\) left \d+ process\(es\) behind: .*pid `+strconv.Itoa(int(child))+` `))
	t.WaitMetric(before+1, "afterburn_isolation_leftovers_total")
	t.Eventually(fmt.Sprintf("pid %d killed", int(child)), func() (bool, string) {
		err := syscall.Kill(int(child), 0)
		return errors.Is(err, syscall.ESRCH), fmt.Sprintf("kill -0: %v", err)
	})
	echoesOwnIDs(t, 2)
}
