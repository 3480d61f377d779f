package watchdog

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/afterburn-dev/afterburn/go/internal/watchdog/config"
	"github.com/afterburn-dev/afterburn/go/internal/watchdog/pool"
	dto "github.com/prometheus/client_model/go"
)

// Fork mode (PROTOCOL.md §2.6) with testdata/template.c as the template: Go
// cannot be one, its runtime being multi-threaded when it would fork.

// buildTemplate compiles testdata/template.c. It runs before the watchdog
// starts, so its cc is not an unknown child for the orphan reaper.
func buildTemplate(t *testing.T) string {
	t.Helper()
	cc, err := exec.LookPath("cc")
	if err != nil {
		t.Skip("fork mode tests need a C compiler (cc) to build testdata/template.c")
	}
	bin := filepath.Join(t.TempDir(), "template")
	if out, err := exec.Command(cc, "-O2", "-o", bin, "testdata/template.c").CombinedOutput(); err != nil {
		t.Fatalf("cc testdata/template.c: %v\n%s", err, out)
	}
	return bin
}

// startFork runs a watchdog with spawn=fork and the C template, steered by env.
func startFork(t *testing.T, mut func(*config.Config), env ...string) *harness {
	t.Helper()
	bin := buildTemplate(t)
	return start(t, func(c *config.Config) {
		c.Command = []string{bin}
		c.Spawn = config.SpawnFork
		c.ForkTimeout = 5 * time.Second
		if mut != nil {
			mut(c)
		}
	}, env...)
}

// forkedReply is what template.c answers to GET /.
type forkedReply struct {
	pid, ppid, pgid int
	slot, kind      string
}

func (h *harness) whoami() forkedReply {
	h.t.Helper()
	resp, body := h.Get("/")
	if resp.StatusCode != 200 {
		h.t.Fatalf("GET /: status %d, body %q", resp.StatusCode, body)
	}
	var r forkedReply
	for _, f := range strings.Fields(body) {
		k, v, _ := strings.Cut(f, "=")
		n, _ := strconv.Atoi(v)
		switch k {
		case "pid":
			r.pid = n
		case "ppid":
			r.ppid = n
		case "pgid":
			r.pgid = n
		case "slot":
			r.slot = v
		case "kind":
			r.kind = v
		}
	}
	if r.pid == 0 {
		h.t.Fatalf("GET /: body %q", body)
	}
	return r
}

// wantForked checks a worker of §2.6: forked, the watchdog's child, leader
// of its own process group.
func wantForked(t *testing.T, r forkedReply) {
	t.Helper()
	if r.kind != "fork" || r.ppid != os.Getpid() || r.pgid != r.pid {
		t.Fatalf("worker %+v: want kind fork, ppid %d (the watchdog), pgid == pid", r, os.Getpid())
	}
}

// gone reports whether pid was reaped: a zombie still answers kill(pid, 0).
func gone(pid int) bool { return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) }

func forkReady(n int) func(st pool.Status, ready bool) bool {
	return func(st pool.Status, ready bool) bool {
		return st.Idle == n && st.Started["fork"] == n && st.Template == "ready"
	}
}

// TestForkLifecycle: forked workers serve; a crash is replaced by a fork; a
// killed template comes back while the workers serve on; shutdown leaves no
// process behind.
func TestForkLifecycle(t *testing.T) {
	h := startFork(t, func(c *config.Config) { c.Workers = 2 })
	h.waitState("two forked workers", forkReady(2))
	first := h.whoami()
	wantForked(t, first)

	resp, body := h.Get("/_/ready")
	var ready map[string]any
	if err := json.Unmarshal([]byte(body), &ready); err != nil || resp.StatusCode != 200 {
		t.Fatalf("/_/ready: %d %q: %v", resp.StatusCode, body, err)
	}
	started, _ := ready["started"].(map[string]any)
	if ready["template"] != "ready" || ready["template_pid"] == nil || started["fork"] != 2.0 || started["exec"] != 0.0 {
		t.Fatalf("/_/ready body %s: want template ready with its pid, started fork 2, exec 0", body)
	}
	if n := counter(t, h.wd.m.WorkerStarts, "fork"); n != 2 {
		t.Fatalf("afterburn_worker_starts_total{kind=fork} = %v; want 2", n)
	}
	var forks dto.Metric
	h.wd.m.ForkDuration.Write(&forks)
	if n := forks.GetHistogram().GetSampleCount(); n != 2 {
		t.Fatalf("afterburn_fork_duration_seconds has %d samples; want 2", n)
	}

	// A crash is replaced by a fork, in milliseconds.
	crashed := time.Now()
	if resp, _ := h.Get("/crash"); resp.StatusCode != 502 {
		t.Fatalf("GET /crash: status %d; want 502", resp.StatusCode)
	}
	h.waitState("the crashed worker replaced", forkReady(2))
	t.Logf("crash to forked replacement idle: %v", time.Since(crashed))
	if n := counter(t, h.wd.m.WorkerStarts, "fork"); n != 3 {
		t.Fatalf("afterburn_worker_starts_total{kind=fork} = %v; want 3", n)
	}
	wantForked(t, h.whoami())

	// The template dies: workers serve on, it comes back, counted.
	_, oldTemplate := h.wd.pool.Template()
	syscall.Kill(oldTemplate, syscall.SIGKILL)
	h.logs.waitContains(t, "template pid "+strconv.Itoa(oldTemplate)+" replaced: crashed")
	wantForked(t, h.whoami())
	h.waitState("a new template", func(st pool.Status, _ bool) bool {
		return st.Template == "ready" && st.TemplatePID != oldTemplate && st.TemplatePID != 0
	})
	if n := counter(t, h.wd.m.TemplateRestarts, "crashed"); n != 1 {
		t.Fatalf("afterburn_template_restarts_total{reason=crashed} = %v; want 1", n)
	}
	// The new template forks too: crash a worker again.
	crashed = time.Now()
	h.Get("/crash")
	h.waitState("a replacement from the new template", forkReady(2))
	t.Logf("crash to forked replacement idle (second template): %v", time.Since(crashed))

	h.wd.m.ForkDuration.Write(&forks)
	hist := forks.GetHistogram()
	t.Logf("fork request to handshake reply: mean %v over %d forks",
		time.Duration(hist.GetSampleSum()/float64(hist.GetSampleCount())*float64(time.Second)), hist.GetSampleCount())

	// Shutdown ends the template and every worker, reaped.
	pids := append([]int{templatePID(t, h.wd.pool)}, h.wd.pool.WorkerPIDs()...)
	if err := h.stop(); err != nil {
		t.Fatal(err)
	}
	for _, pid := range pids {
		if !gone(pid) {
			t.Errorf("pid %d still exists (a zombie, or running) after shutdown", pid)
		}
	}
	h.logs.waitContains(t, "template pid "+strconv.Itoa(pids[0])+" stopped: exit status 0")
}

func templatePID(t *testing.T, p *pool.Pool) int {
	t.Helper()
	_, pid := p.Template()
	if pid == 0 {
		t.Fatal("no template pid")
	}
	return pid
}

// TestForkRecycle: recycling (§9.7) replaces workers with forks.
func TestForkRecycle(t *testing.T) {
	h := startFork(t, func(c *config.Config) { c.MaxRequests = 2 })
	h.waitState("a forked worker", forkReady(1))
	seen := map[int]bool{}
	for range 3 {
		r := h.whoami()
		wantForked(t, r)
		seen[r.pid] = true
		h.whoami()
		// Make-before-break (§9.7): the successor takes the slot once ready.
		h.logs.waitContains(t, "w1 pid "+strconv.Itoa(r.pid)+" recycled (exit status 0)")
		h.waitState("the successor", forkReady(1))
	}
	if len(seen) != 3 {
		t.Fatalf("three rounds of max_requests 2 met %d workers; want 3", len(seen))
	}
	if n := counter(t, h.wd.m.WorkerStarts, "fork"); n != 4 {
		t.Fatalf("afterburn_worker_starts_total{kind=fork} = %v; want 4", n)
	}
	if n := counter(t, h.wd.m.WorkerStarts, "exec"); n != 0 {
		t.Fatalf("afterburn_worker_starts_total{kind=exec} = %v; want 0", n)
	}
}

// TestForkFailedFallsBackToExec: a template that answers failed fails the
// slot's starts (init_failed), and after three the slot is exec'd.
func TestForkFailedFallsBackToExec(t *testing.T) {
	h := startFork(t, nil, "TPL_FORK=failed")
	h.logs.waitContains(t, "the template could not fork: EAGAIN: refused on purpose")
	h.logs.waitContains(t, "w1: 3 consecutive failed forks")
	h.logs.waitContains(t, "w1: 3 consecutive failed forks: starting it the exec way")
	h.waitState("an exec'd worker", func(st pool.Status, _ bool) bool { return st.Idle == 1 && st.Started["exec"] == 1 })
	if r := h.whoami(); r.kind != "exec" || r.ppid != os.Getpid() {
		t.Fatalf("worker %+v; want an exec'd child of the watchdog", r)
	}
	if n := counter(t, h.wd.m.Restarts, "init_failed"); n != 3 {
		t.Fatalf("afterburn_worker_restarts_total{reason=init_failed} = %v; want 3", n)
	}
	if st, _ := h.wd.pool.Snapshot(); st.Template != "ready" {
		t.Fatalf("template %q; a template that answers failed stays ready", st.Template)
	}
}

// TestForkTemplateMisbehaves: a template that never answers a fork, closes
// its control socket, fails or hangs its initialisation is replaced and
// counted, and slots are exec'd meanwhile.
func TestForkTemplateMisbehaves(t *testing.T) {
	for _, tc := range []struct {
		env, restart, log string
	}{
		{"TPL_FORK=silent", "unresponsive", "did not answer the fork request within fork_timeout"},
		{"TPL_FORK=close", "worker_closed", "control socket closed by the template"},
		{"TPL_INIT=exit", "init_failed", "initialisation failed on purpose"},
		{"TPL_INIT=hang", "init_timeout", "template init_timeout"},
	} {
		t.Run(tc.env, func(t *testing.T) {
			h := startFork(t, func(c *config.Config) {
				c.ForkTimeout = 300 * time.Millisecond
				c.InitTimeout = 300 * time.Millisecond
			}, tc.env)
			h.logs.waitContains(t, tc.log)
			waitCounter(t, h, "template restarts "+tc.restart, func() bool {
				return counter(t, h.wd.m.TemplateRestarts, tc.restart) >= 1
			})
			if tc.restart == "unresponsive" {
				waitCounter(t, h, "init_timeout", func() bool { return counter(t, h.wd.m.Restarts, "init_timeout") >= 1 })
			}
			// Whatever the template does, the slot serves, the exec way.
			h.waitState("a worker", func(st pool.Status, _ bool) bool { return st.Idle == 1 })
			if r := h.whoami(); r.kind != "exec" {
				t.Fatalf("worker %+v; want exec'd", r)
			}
		})
	}
}

// waitCounter waits for a metric, waking on log lines (every change here logs).
func waitCounter(t *testing.T, h *harness, what string, ok func() bool) {
	t.Helper()
	h.logs.waitFor(t, "while waiting for "+what, func(string) bool { return ok() })
}

// TestForkNoCapability: a library that does not list fork is slot 1's
// worker, and spawn=fork behaves as exec.
func TestForkNoCapability(t *testing.T) {
	h := startFork(t, func(c *config.Config) { c.Workers = 2 }, "TPL_INIT=nofork")
	h.logs.waitContains(t, "the library cannot fork")
	h.waitState("two exec'd workers", func(st pool.Status, _ bool) bool {
		return st.Idle == 2 && st.Started["exec"] == 2 && st.Template == "none"
	})
	for range 2 {
		if r := h.whoami(); r.kind != "exec" {
			t.Fatalf("worker %+v; want exec'd", r)
		}
	}
	if n := counter(t, h.wd.m.WorkerStarts, "exec"); n != 2 {
		t.Fatalf("afterburn_worker_starts_total{kind=exec} = %v; want 2 (the template kept, one exec)", n)
	}
}

func TestForkNeedsFdMode(t *testing.T) {
	_, err := config.ParseConfig([]string{"-spawn", "fork", "-stdio", "--", "x"}, func(string) string { return "" }, nil)
	if err == nil || !strings.Contains(err.Error(), "spawn=fork needs fd mode") {
		t.Fatalf("spawn=fork stdio=true: %v; want a clear error", err)
	}
	if _, err := config.ParseConfig([]string{"-spawn", "vfork", "--", "x"}, func(string) string { return "" }, nil); err == nil {
		t.Fatal("spawn=vfork accepted")
	}
	c, err := config.ParseConfig([]string{"--", "x"}, func(k string) string { return map[string]string{"spawn": "fork", "fork_timeout": "2.5"}[k] }, nil)
	if err != nil || c.Spawn != config.SpawnFork || c.ForkTimeout != 2500*time.Millisecond {
		t.Fatalf("spawn and fork_timeout from the environment: %+v, %v", c, err)
	}
}
