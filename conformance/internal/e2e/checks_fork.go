package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
)

// The checks of §2.6: workers forked from a template. Each starts a watchdog of its own with
// -spawn fork; for a library that does not list fork the watchdog starts workers the exec
// way, and the check is skipped.

// forkPool starts a watchdog in fork mode with two workers and waits for both; it skips the
// check when the library did not list fork.
func forkPool(t *T, flags []string, env map[string]string) *Status {
	t.StartWatchdog(append([]string{"-workers", "2", "-spawn", "fork"}, flags...), env, true)
	t.WaitIdle(2)
	_, st := t.ReadyStatus()
	if st.Template == "" || st.Template == "none" {
		t.Skipf("the library does not list fork (§2.6): the watchdog started its workers the exec way")
	}
	return st
}

// initLog is a fresh path for FIXTURE_INIT_LOG, removed when the check ends.
func initLog(t *T) string {
	dir, err := os.MkdirTemp("", "afterburn-fork-")
	if err != nil {
		t.Fatalf("%v", err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return filepath.Join(dir, "init.log")
}

// initPids reads the pids FIXTURE_INIT_LOG collected: one per initialisation.
func initPids(t *T, path string) []int {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("the fixture's initialisation log %s: %v", path, err)
	}
	var pids []int
	for _, f := range strings.Fields(string(b)) {
		pid, err := strconv.Atoi(f)
		if err != nil {
			t.Fatalf("initialisation log %q: %v", b, err)
		}
		pids = append(pids, pid)
	}
	return pids
}

// exe is the program a process runs.
func exe(t *T, pid int) string {
	p, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
	if err != nil {
		t.Skipf("cannot read /proc/%d/exe: %v", pid, err)
	}
	return p
}

// forkStarted waits until n workers in all were forked (afterburn_worker_starts_total) and
// both live ones are idle, forked, beside a ready template (/_/ready counts live workers).
func forkStarted(t *T, n int) *Status {
	t.WaitMetric(float64(n), "afterburn_worker_starts_total", "kind", "fork")
	var st *Status
	t.Eventually("two idle forked workers in /_/ready", func() (bool, string) {
		_, st = t.ReadyStatus()
		return st.Idle != nil && *st.Idle == 2 && st.Started["fork"] == 2 && st.Template == "ready",
			fmt.Sprintf("%+v, template %s", st.Started, st.Template)
	})
	return st
}

// forkWorkersFromTemplate: §2.6 — the template initialises once; both workers are its forks,
// children of the watchdog (the subreaper), each in a process group of its own, running the
// template's program, and none initialised again.
func forkWorkersFromTemplate(t *T) {
	log := initLog(t)
	st := forkPool(t, nil, map[string]string{"FIXTURE_INIT_LOG": log})
	if st.Template != "ready" || st.TemplatePid <= 0 || st.Started["fork"] != 2 || st.Started["exec"] != 0 {
		t.Fatalf("/_/ready: template %q (pid %d), started %v; want a ready template and 2 forked workers", st.Template, st.TemplatePid, st.Started)
	}
	tpl := st.TemplatePid
	if pids := initPids(t, log); !slices.Equal(pids, []int{tpl}) {
		t.Fatalf("initialisations by pids %v; want the template's alone (%d)", pids, tpl)
	}
	kids, err := children(t.WD.Pid())
	if err != nil {
		t.Skipf("cannot read /proc: %v", err)
	}
	ws := t.Workers()
	if len(ws) != 2 || !slices.Contains(kids, tpl) {
		t.Fatalf("the watchdog's children %v, workers %v; want the template %d and 2 workers", kids, ws, tpl)
	}
	for _, pid := range ws {
		if g, err := pgrp(pid); err != nil || g != pid {
			t.Fatalf("worker %d is in process group %d (%v); want its own", pid, g, err)
		}
		if exe(t, pid) != exe(t, tpl) {
			t.Fatalf("worker %d runs %s, the template %s", pid, exe(t, pid), exe(t, tpl))
		}
	}
	r := t.JSON(t.Get("/whoami"), 200)
	if pid, _ := r["pid"].(float64); !slices.Contains(ws, int(pid)) {
		t.Fatalf("/whoami answered by pid %v; workers %v", r["pid"], ws)
	}
}

// forkCrashReplacedByFork: §2.6 — a worker that crashes is replaced by a new fork, not an
// initialisation.
func forkCrashReplacedByFork(t *T) {
	log := initLog(t)
	forkPool(t, nil, map[string]string{"FIXTURE_INIT_LOG": log})
	t.WatchdogError(t.Get("/crash?when=before"), 502, "worker_crashed")
	st := forkStarted(t, 3)
	if st.Started["exec"] != 0 {
		t.Fatalf("started %v after a crash; want the replacement forked", st.Started)
	}
	if pids := initPids(t, log); len(pids) != 1 {
		t.Fatalf("initialisations by pids %v after a crash; want the template's alone", pids)
	}
	t.Status(t.Get("/whoami"), 200)
}

// forkTemplateCrash: §2.6 — a template killed leaves the forked workers serving (those of the
// double fork; under isolation=request those of the single fork die with it); a new template
// is started and counted.
func forkTemplateCrash(t *T) {
	log := initLog(t)
	st := forkPool(t, nil, map[string]string{"FIXTURE_INIT_LOG": log})
	old, ws := st.TemplatePid, t.Workers()
	// §2.6: workers of the single fork (the template's children) die with it; a request
	// dispatched to one in that instant may be answered 502 worker_crashed (§8.4), at most
	// one per worker.
	kids, _ := children(old)
	dying := 0
	if err := syscall.Kill(old, syscall.SIGKILL); err != nil {
		t.Fatalf("kill the template %d: %v", old, err)
	}
	seen := map[float64]bool{}
	for i := range 10 {
		resp := t.Get(fmt.Sprintf("/whoami?i=%d", i))
		if len(kids) > 0 && resp.StatusCode == 502 && dying < len(kids) {
			t.WatchdogError(resp, 502, "worker_crashed")
			dying++
			continue
		}
		r := t.JSON(resp, 200)
		pid, _ := r["pid"].(float64)
		switch {
		case t.cfg.isolated() && seen[pid]:
			t.Fatalf("/whoami answered twice by pid %v while the template restarts; want a fresh process per request (§2.7)", pid)
		case !t.cfg.isolated() && !slices.Contains(ws, int(pid)):
			t.Fatalf("/whoami answered by pid %v while the template restarts; want one of the workers %v", r["pid"], ws)
		}
		seen[pid] = true
	}
	t.Eventually("a new ready template", func() (bool, string) {
		_, st = t.ReadyStatus()
		return st.Template == "ready" && st.TemplatePid != old, fmt.Sprintf("%s %d", st.Template, st.TemplatePid)
	})
	t.WaitMetric(1, "afterburn_template_restarts_total", "reason", "crashed")
	if t.cfg.isolated() {
		// §2.7: while no template was ready, spares were started the exec way (§2.6),
		// each an initialisation of its own; the workers changed with every request.
		if pids := initPids(t, log); !slices.Contains(pids, old) || !slices.Contains(pids, st.TemplatePid) {
			t.Fatalf("initialisations by pids %v; want the old template's %d and the new one's %d among them", pids, old, st.TemplatePid)
		}
		return
	}
	if pids := initPids(t, log); !slices.Equal(pids, []int{old, st.TemplatePid}) {
		t.Fatalf("initialisations by pids %v; want the old template's and the new one's", pids)
	}
	if now := t.Workers(); !slices.Equal(slices.Sorted(slices.Values(now)), slices.Sorted(slices.Values(ws))) {
		t.Fatalf("workers %v after the template's restart; want the same %v", now, ws)
	}
}

// forkRandomDiffers: §2.6 — two workers forked from one template draw different random
// numbers: the generator is reseeded in each.
func forkRandomDiffers(t *T) {
	forkPool(t, nil, nil)
	results := make(chan *Resp, 2)
	errs := make(chan error, 2)
	for range 2 {
		go func() {
			r, err := t.DoErr(t.NewRequest("GET", "/random?ms=300", nil)) // both at once: on both workers
			results <- r
			errs <- err
		}()
	}
	got := map[float64]string{}
	for range 2 {
		r, err := <-results, <-errs
		if err != nil {
			t.Fatalf("GET /random: %v", err)
		}
		m := t.JSON(r, 200)
		pid, _ := m["pid"].(float64)
		v, _ := m["random"].(string)
		got[pid] = v
	}
	var draws []string
	for _, v := range got {
		draws = append(draws, v)
	}
	if len(got) != 2 || draws[0] == "" || draws[0] == draws[1] {
		t.Fatalf("draws by pid %v; want two workers drawing different numbers", got)
	}
}

// forkThreadRefused: §2.6 — a template with a thread of its own running does not fork into
// it: every fork fails with a reason that names the thread, and after three failed forks a
// slot is started the exec way, and serves.
func forkThreadRefused(t *T) {
	w := t.StartWatchdog([]string{"-workers", "2", "-spawn", "fork"}, map[string]string{"FIXTURE_TEMPLATE_THREAD": "1"}, false)
	t.Eventually("two workers started the exec way", func() (bool, string) {
		code, st, body, err := w.status(t.ctx, "/_/ready")
		if err != nil || st == nil {
			return false, fmt.Sprintf("%d %q %v", code, body, err)
		}
		if st.Template == "none" {
			t.Skipf("the library does not list fork (§2.6)")
		}
		return code == 200 && st.Idle != nil && *st.Idle == 2 && st.Started["exec"] == 2, string(body)
	})
	if !strings.Contains(w.Log.String(), "fixture-idle-thread") {
		t.Fatalf("no log line names the template's thread fixture-idle-thread:\n%s", w.Tail())
	}
	t.Status(t.Get("/whoami"), 200)
}

// forkRecycle: §2.6, §9.7 — a recycled worker's successor is a fork too.
func forkRecycle(t *T) {
	if t.cfg.isolated() {
		t.Skipf("recycling settings are refused under isolation=request: every worker serves one request (§2.7)")
	}
	log := initLog(t)
	forkPool(t, []string{"-max_requests", "3"}, map[string]string{"FIXTURE_INIT_LOG": log})
	for i := range 12 {
		t.Status(t.Get(fmt.Sprintf("/whoami?i=%d", i)), 200)
	}
	t.WaitMetric(1, "afterburn_worker_restarts_total", "reason", "recycled")
	st := forkStarted(t, 3)
	if st.Started["exec"] != 0 {
		t.Fatalf("started %v after recycling; want successors forked", st.Started)
	}
	if pids := initPids(t, log); len(pids) != 1 {
		t.Fatalf("initialisations by pids %v after recycling; want the template's alone", pids)
	}
}
