package watchdog

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/afterburn-dev/afterburn/go/internal/watchdog/config"
	"github.com/afterburn-dev/afterburn/go/internal/watchdog/wire"
	dto "github.com/prometheus/client_model/go"
)

// Isolation, PROTOCOL.md §2.7, with testdata/template.c as the template.

// startIsolated runs a watchdog with isolation=request and the C template.
func startIsolated(t *testing.T, mut func(*config.Config), env ...string) *harness {
	t.Helper()
	return startFork(t, func(c *config.Config) {
		c.Isolation = config.IsolationRequest
		c.IsolationGrace = 200 * time.Millisecond
		if mut != nil {
			mut(c)
		}
	}, env...)
}

// isolatedReply is what template.c answers: its fields by name.
func (h *harness) isolatedGet(path string) map[string]string {
	h.t.Helper()
	resp, body := h.Get(path)
	if resp.StatusCode != 200 {
		h.t.Fatalf("GET %s: status %d, body %q", path, resp.StatusCode, body)
	}
	fields := map[string]string{}
	for _, f := range strings.Fields(body) {
		k, v, _ := strings.Cut(f, "=")
		fields[k] = v
	}
	if fields["pid"] == "" {
		h.t.Fatalf("GET %s: body %q", path, body)
	}
	return fields
}

func atoi(s string) int { n, _ := strconv.Atoi(s); return n }

// waitGone waits until what (a path or a pid) no longer exists.
func waitGone(t *testing.T, what string, exists func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	for exists() {
		if time.Now().After(deadline) {
			t.Fatalf("%s still exists after %v", what, waitLimit)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func pathExists(p string) func() bool {
	return func() bool { _, err := os.Lstat(p); return err == nil }
}

func TestIsolationOneRequestPerWorker(t *testing.T) {
	h := startIsolated(t, func(c *config.Config) { c.Workers = 2 })
	h.waitState("two forked spares", forkReady(2))
	pids := map[string]bool{}
	var dirs []string
	for i := range 6 {
		r := h.isolatedGet("/")
		if r["kind"] != "fork" {
			t.Fatalf("request %d: served by %v; want a forked worker", i, r)
		}
		if pids[r["pid"]] {
			t.Fatalf("request %d: pid %s served an earlier request too; want a fresh process per request (§2.7)", i, r["pid"])
		}
		pids[r["pid"]] = true
		dir := r["tmpdir"]
		if dir == "" || !strings.HasPrefix(dir, h.wd.pool.IsolationRoot()+"/") {
			t.Fatalf("request %d: TMPDIR %q; want a directory of its own under %s", i, dir, h.wd.pool.IsolationRoot())
		}
		dirs = append(dirs, dir)
		waitGone(t, "pid "+r["pid"], func() bool { return !gone(atoi(r["pid"])) })
	}
	for _, d := range dirs {
		waitGone(t, d, pathExists(d))
	}
	h.waitState("two forked spares again", forkReady(2))
	if n := counter(t, h.wd.m.WorkerStarts, "fork"); n < 8 {
		t.Fatalf("afterburn_worker_starts_total{kind=fork} = %v; want at least 8: two spares and one per request", n)
	}
	for _, r := range wire.RestartReasons {
		if n := counter(t, h.wd.m.Restarts, string(r)); n != 0 {
			t.Fatalf("afterburn_worker_restarts_total{reason=%s} = %v; want none: a worker ending after its request is not a restart", r, n)
		}
	}
	root := h.wd.pool.IsolationRoot()
	if err := h.stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(root); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("%s after shutdown: %v; want it removed", root, err)
	}
}

func TestIsolationConcurrentRequestsEachAFreshProcess(t *testing.T) {
	h := startIsolated(t, func(c *config.Config) { c.Workers = 4 })
	h.waitState("four forked spares", forkReady(4))
	var mu sync.Mutex
	pids := map[string]int{}
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 5 {
				resp, body := h.Get("/")
				if resp.StatusCode != 200 {
					t.Errorf("GET /: %d %q", resp.StatusCode, body)
					return
				}
				pid, _, _ := strings.Cut(strings.TrimPrefix(body, "pid="), " ")
				mu.Lock()
				pids[pid]++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if len(pids) != 20 {
		t.Fatalf("20 requests were served by %d processes %v; want 20 (§2.7)", len(pids), pids)
	}
}

func TestIsolationLingeringWorkerKilledAndCounted(t *testing.T) {
	h := startIsolated(t, nil)
	h.waitState("a forked spare", forkReady(1))
	r := h.isolatedGet("/linger")
	pid := atoi(r["pid"])
	if line := h.logs.waitContains(t, "did not exit within isolation_grace 200ms"); !strings.Contains(line, "pid "+r["pid"]+" (request ") {
		t.Fatalf("report %q; want the worker and its request", line)
	}
	waitGone(t, "pid "+r["pid"], func() bool { return !gone(pid) })
	if n := counterValue(h.wd.m.IsolationKills); n != 1 {
		t.Fatalf("afterburn_isolation_kills_total = %v; want 1", n)
	}
	waitGone(t, r["tmpdir"], pathExists(r["tmpdir"]))
	h.isolatedGet("/") // the pool serves on
}

func TestIsolationLeftoversReportedAndKilled(t *testing.T) {
	h := startIsolated(t, nil)
	h.waitState("a forked spare", forkReady(1))
	for i, route := range []string{"/child", "/daemon"} {
		r := h.isolatedGet(route)
		left := atoi(r["left"])
		if left == 0 {
			t.Fatalf("GET %s: %v; want the pid it left", route, r)
		}
		// Named by its command at the time: "sleep", or the template's name
		// when it had not yet exec'd sleep (seen on a busy machine).
		line := h.logs.waitContains(t, "pid "+strconv.Itoa(left)+" (")
		if !strings.Contains(line, "pid "+r["pid"]) || !strings.Contains(line, "left 1 process(es) behind") || !strings.Contains(line, "(request ") {
			t.Fatalf("report %q; want the worker, its request and what it left", line)
		}
		waitGone(t, "left-behind pid "+strconv.Itoa(left), func() bool { return !gone(left) })
		if n := counterValue(h.wd.m.IsolationLeftovers); n != float64(i+1) {
			t.Fatalf("afterburn_isolation_leftovers_total = %v; want %d", n, i+1)
		}
	}
}

func TestIsolationTempDirRemovedWithoutFollowingLinks(t *testing.T) {
	outside := t.TempDir()
	keep := filepath.Join(outside, "keep")
	if err := os.WriteFile(keep, []byte("not the request's"), 0o600); err != nil {
		t.Fatal(err)
	}
	h := startIsolated(t, nil, "TPL_OUTSIDE="+outside)
	h.waitState("a forked spare", forkReady(1))
	r := h.isolatedGet("/symlink")
	waitGone(t, r["tmpdir"], pathExists(r["tmpdir"]))
	if _, err := os.Stat(keep); err != nil {
		t.Fatalf("%s, reached through a symbolic link the request left in its TMPDIR: %v; want it untouched", keep, err)
	}
}

func TestIsolationCrashCostsOnlyItsRequest(t *testing.T) {
	h := startIsolated(t, func(c *config.Config) { c.Workers = 2 })
	h.waitState("two forked spares", forkReady(2))
	if resp, _ := h.Get("/crash"); resp.StatusCode != 502 {
		t.Fatalf("GET /crash: status %d; want 502", resp.StatusCode)
	}
	for range 3 {
		h.isolatedGet("/")
	}
	if n := counter(t, h.wd.m.Restarts, "crashed"); n != 1 {
		t.Fatalf("afterburn_worker_restarts_total{reason=crashed} = %v; want 1", n)
	}
}

func TestIsolationSlowForksQueueThenOverloadAndTimeout(t *testing.T) {
	// Each fork takes 300 ms: one spare, then requests wait for the next fork (§10.3).
	h := startIsolated(t, func(c *config.Config) {
		c.MaxInflight = 2
		c.ExecTimeout = 150 * time.Millisecond
	}, "TPL_FORK_DELAY_MS=300")
	h.waitState("a forked spare", forkReady(1))
	h.isolatedGet("/") // the spare; the next fork starts now and takes 300 ms
	slow := h.getLater("/")
	h.waitQueued(1)
	second := h.getLater("/")
	h.waitQueued(2)
	if resp, body := h.Get("/"); resp.StatusCode != 429 {
		t.Fatalf("a third request while two are held with max_inflight 2: %d %q; want 429", resp.StatusCode, body)
	}
	for _, ch := range []<-chan string{slow, second} {
		if got := <-ch; !strings.HasPrefix(got, "504 ") {
			t.Fatalf("a request queued past its deadline while the template forks: %q; want 504 (§5.2, §10.3)", got)
		}
	}
}

func TestIsolationRefusedWithoutFork(t *testing.T) {
	h := startIsolated(t, nil, "TPL_INIT=nofork")
	select {
	case err := <-h.done:
		h.done <- err
		if err == nil || !strings.Contains(err.Error(), "isolation=request needs a library that can fork") {
			t.Fatalf("serve returned %v; want the refusal", err)
		}
	case <-time.After(waitLimit):
		t.Fatal("the watchdog serves on with isolation=request and a library that cannot fork")
	}
}

// counterValue reads a counter without labels.
func counterValue(c interface{ Write(*dto.Metric) error }) float64 {
	var m dto.Metric
	c.Write(&m)
	return m.GetCounter().GetValue()
}
