package watchdog

import (
	"os"
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
	for range 4 {
		r := h.isolatedGet("/")
		pid := atoi(r["pid"])
		if atoi(r["ppid"]) != tpl || atoi(r["pgid"]) != pid || r["kind"] != "fork" {
			t.Fatalf("worker %v; want a fork, child of the template %d, leading its own group (§2.6)", r, tpl)
		}
		// Reaped by the template at the watchdog's word: no zombie stays.
		waitGone(t, "pid "+r["pid"], func() bool { return !gone(pid) })
	}
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
