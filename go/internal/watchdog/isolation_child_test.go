package watchdog

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/afterburn-dev/afterburn/go/internal/watchdog/config"
	"github.com/afterburn-dev/afterburn/go/internal/watchdog/pool"
)

// The single fork (PROTOCOL.md §2.6, fork-child) under isolation=request,
// with testdata/template.c, which lists fork-child unless TPL_CHILD=no.

// TestIsolationForkChildWorkersStayTheTemplates: a worker is the template's
// child, leads its own process group, and is reaped once it has served.
func TestIsolationForkChildWorkersStayTheTemplates(t *testing.T) {
	h := startIsolated(t, func(c *config.Config) { c.Workers = 2 })
	h.waitState("two forked spares", forkReady(2))
	tpl := templatePID(t, h.wd.pool)
	h.logs.waitContains(t, "stay its children (fork-child)")
	root := h.wd.pool.IsolationRoot()
	for range 4 {
		r := h.isolatedGet("/")
		pid := atoi(r["pid"])
		if atoi(r["ppid"]) != tpl || atoi(r["pgid"]) != pid || r["kind"] != "fork" {
			t.Fatalf("worker %v; want a fork, child of the template %d, leading its own group (§2.6)", r, tpl)
		}
		// §2.7: the worker made its TMPDIR itself, in the root, named after its pid.
		if dir := r["tmpdir"]; filepath.Dir(dir) != root || !strings.HasPrefix(filepath.Base(dir), r["pid"]+"-") {
			t.Fatalf("worker %v: TMPDIR %q; want %s/%s-... (§2.7)", r, dir, root, r["pid"])
		}
		// Reaped by the template at the watchdog's word: no zombie stays.
		waitGone(t, "pid "+r["pid"], func() bool { return !gone(pid) })
		waitGone(t, r["tmpdir"], pathExists(r["tmpdir"]))
	}
}

// TestIsolationForkChildTmpdirFailureIsAFailedFork: a worker of the single
// fork that cannot make its temporary directory (here: the root is gone)
// exits before its handshake saying why, a failed start of its slot; once
// the root is back, the slot forks and serves again (§2.6, §2.7).
func TestIsolationForkChildTmpdirFailureIsAFailedFork(t *testing.T) {
	h := startIsolated(t, nil)
	h.waitState("a forked spare", forkReady(1))
	root := h.wd.pool.IsolationRoot()
	if err := os.RemoveAll(root); err != nil {
		t.Fatal(err)
	}
	h.isolatedGet("/") // the spare, forked before; its successor's fork fails
	h.logs.waitContains(t, "cannot make its temporary directory in "+root+": No such file or directory")
	if line := h.logs.waitContains(t, "w1 init_failed"); !strings.Contains(line, "exit status 1") {
		t.Fatalf("failed start %q; want the worker's exit status 1", line)
	}
	if err := os.Mkdir(root, 0o700); err != nil {
		t.Fatal(err)
	}
	if r := h.isolatedGet("/"); !strings.HasPrefix(r["tmpdir"], root+"/") {
		t.Fatalf("after the root came back: %v; want a TMPDIR in %s", r, root)
	}
}

// TestIsolationForkChildTmpdirNamedElsewhereIsMalformed: the watchdog
// removes what a worker names as its temporary directory, so a name outside
// the root, or not after the worker's pid, is a malformed handshake reply
// and is never removed (§2.7, §3.2).
func TestIsolationForkChildTmpdirNamedElsewhereIsMalformed(t *testing.T) {
	h := startIsolated(t, nil, "TPL_TMPDIR=outside")
	h.logs.waitContains(t, `AfterBurn-Tmpdir "/tmp" is not `+h.wd.pool.IsolationRoot()+"/")
	waitCounter(t, h, "handshake protocol errors", func() bool {
		return counter(t, h.wd.m.ProtocolErrors, "handshake") >= 1
	})
	if _, err := os.Stat("/tmp"); err != nil {
		t.Fatalf("/tmp: %v", err)
	}
}

// TestIsolationForkChildUnnamedTmpdirRemoved: a worker that made its
// temporary directory and died before naming it leaves nothing behind: the
// watchdog finds it by the worker's pid while that pid is held (§2.7).
func TestIsolationForkChildUnnamedTmpdirRemoved(t *testing.T) {
	h := startIsolated(t, nil, "TPL_TMPDIR=die")
	line := h.logs.waitContains(t, " and exits before its handshake")
	_, rest, _ := strings.Cut(line, " made ")
	dir, _, _ := strings.Cut(rest, " and exits")
	if !strings.HasPrefix(dir, h.wd.pool.IsolationRoot()+"/") {
		t.Fatalf("log %q; want a directory in %s", line, h.wd.pool.IsolationRoot())
	}
	waitGone(t, dir, pathExists(dir))
}

// TestIsolationOldTemplateDoubleForks: a template that lists fork only is
// sent the double fork of §2.6, and its workers are the watchdog's children.
func TestIsolationOldTemplateDoubleForks(t *testing.T) {
	h := startIsolated(t, nil, "TPL_CHILD=no")
	h.waitState("a forked spare", forkReady(1))
	for range 2 {
		r := h.isolatedGet("/")
		if atoi(r["ppid"]) != os.Getpid() {
			t.Fatalf("worker %v; want a child of the watchdog %d (double fork)", r, os.Getpid())
		}
	}
	if strings.Contains(h.logs.String(), "fork-child") {
		t.Fatal("the log names fork-child for a template that does not list it")
	}
}

// TestForkWithoutIsolationDoubleForks: outside isolation=request a template
// that lists fork-child still double-forks: long-lived workers must outlive
// a template's crash (§2.6).
func TestForkWithoutIsolationDoubleForks(t *testing.T) {
	h := startFork(t, nil)
	h.waitState("a forked worker", forkReady(1))
	wantForked(t, h.whoami())
}

// TestIsolationTemplateKilledWithWorkersAlive: the template's death takes
// its workers with it (PR_SET_PDEATHSIG); each is reaped by the watchdog,
// nothing is left, a new template forks again, and requests are answered
// throughout.
func TestIsolationTemplateKilledWithWorkersAlive(t *testing.T) {
	h := startIsolated(t, func(c *config.Config) { c.Workers = 2 })
	h.waitState("two forked spares", forkReady(2))
	tpl := templatePID(t, h.wd.pool)
	spares := h.wd.pool.WorkerPIDs()
	if len(spares) != 2 {
		t.Fatalf("worker pids %v; want two spares", spares)
	}
	syscall.Kill(tpl, syscall.SIGKILL)
	h.logs.waitContains(t, "template pid "+strconv.Itoa(tpl)+" replaced: crashed")
	for _, pid := range spares {
		waitGone(t, "spare pid "+strconv.Itoa(pid)+" of the dead template", func() bool { return !gone(pid) })
	}
	h.waitState("spares from a new template", func(st pool.Status, _ bool) bool {
		return st.Template == "ready" && st.TemplatePID != tpl && st.Idle == 2
	})
	for range 3 {
		h.isolatedGet("/")
	}
	if n := counter(t, h.wd.m.TemplateRestarts, "crashed"); n != 1 {
		t.Fatalf("afterburn_template_restarts_total{reason=crashed} = %v; want 1", n)
	}
}

// TestIsolationForkChildTemplateMisbehaves: a template that reports the
// exit of a pid it never forked, reports an exit twice, or answers with a
// pid that is not its child breaks §2.6: it is replaced and counted.
func TestIsolationForkChildTemplateMisbehaves(t *testing.T) {
	for _, tc := range []struct{ env, log string }{
		{"TPL_CHILD=stray", "for a pid the template did not fork"},
		// The second report of a pid is refused as such, or, when the
		// watchdog has reaped that worker and forgotten it in between, as a
		// report for a pid the template did not fork: both name the record.
		{"TPL_CHILD=twice", `exit report "exited`},
		{"TPL_CHILD=notchild", "is not the template's child"},
	} {
		t.Run(tc.env, func(t *testing.T) {
			h := startIsolated(t, func(c *config.Config) { c.ForkTimeout = time.Second }, tc.env)
			h.Get("/") // served or not: "twice" breaks the protocol once a worker exits
			h.logs.waitContains(t, tc.log)
			waitCounter(t, h, "template restarts bad_response", func() bool {
				return counter(t, h.wd.m.TemplateRestarts, "bad_response") >= 1
			})
			if n := counter(t, h.wd.m.ProtocolErrors, "handshake"); n < 1 {
				t.Fatalf("afterburn_protocol_errors_total{kind=handshake} = %v; want at least 1", n)
			}
			// Every fork of such a template fails the same way, so its slot
			// backs off (§9.1) rather than serving: not asserted here.
		})
	}
}
