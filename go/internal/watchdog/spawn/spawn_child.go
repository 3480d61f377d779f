package spawn

import (
	"fmt"
	"sync"
	"time"

	"github.com/afterburn-dev/afterburn/go/internal/watchdog/proc"
	"github.com/afterburn-dev/afterburn/go/internal/watchdog/wire"
	"golang.org/x/sys/unix"
)

// The single fork (PROTOCOL.md §2.6, "Workers that stay the template's
// children"): under isolation=request a template that lists fork-child is
// sent "fork-child <slot>" and forks once; the worker stays its child, and
// makes its temporary directory itself (isolation.go). The template reports the worker's exit ("exited <pid> ...") and
// reaps it only when told ("reap <pid>"), so the pid, and the id of the
// worker's process group, cannot be reused while the watchdog may still
// signal them. What the worker leaves behind is re-parented to the watchdog,
// the child subreaper, as with the double fork. When the template dies its
// workers die with it (they asked for PR_SET_PDEATHSIG), and, re-parented to
// the watchdog, are waited for and reaped by it.

// kid is one worker of a fork-child template, from its fork answer to the
// watchdog's word to reap it.
type kid struct {
	exited chan struct{} // closed at the template's exit report
	status string        // the report's account, once exited is closed
}

// kids is a template's part of the single fork: its workers by pid.
type kids struct {
	mu      sync.Mutex
	byPid   map[int]*kid
	changed chan struct{} // closed and replaced whenever one is dropped
}

// addKid registers the pid of a fork answer, read by readControl before the
// exit report that may follow it at once.
func (t *templateProc) addKid(pid int) {
	t.kids.mu.Lock()
	defer t.kids.mu.Unlock()
	if t.kids.byPid == nil {
		t.kids.byPid = map[int]*kid{}
		t.kids.changed = make(chan struct{})
	}
	t.kids.byPid[pid] = &kid{exited: make(chan struct{})}
}

func (t *templateProc) kid(pid int) *kid {
	t.kids.mu.Lock()
	defer t.kids.mu.Unlock()
	return t.kids.byPid[pid]
}

func (t *templateProc) dropKid(pid int) {
	t.kids.mu.Lock()
	defer t.kids.mu.Unlock()
	if _, ok := t.kids.byPid[pid]; ok {
		delete(t.kids.byPid, pid)
		close(t.kids.changed)
		t.kids.changed = make(chan struct{})
	}
}

// liveKids is how many workers the template still holds.
func (t *templateProc) liveKids() int {
	t.kids.mu.Lock()
	defer t.kids.mu.Unlock()
	return len(t.kids.byPid)
}

// awaitKids waits, up to d, until every worker of the template was reaped:
// at shutdown the control socket must outlive them (its end ends the
// template, and its workers with it).
func (t *templateProc) awaitKids(d time.Duration) bool {
	timer := time.NewTimer(d)
	defer timer.Stop()
	for {
		t.kids.mu.Lock()
		n, changed := len(t.kids.byPid), t.kids.changed
		t.kids.mu.Unlock()
		if n == 0 {
			return true
		}
		select {
		case <-changed:
		case <-t.dead:
			return false
		case <-timer.C:
			return false
		}
	}
}

// exitReported handles an "exited" record: only a worker this template
// forked and has not reported yet may be reported (§2.6).
func (t *templateProc) exitReported(rec []byte) error {
	e, err := parseExitRecord(rec)
	if err != nil {
		return err
	}
	t.kids.mu.Lock()
	defer t.kids.mu.Unlock()
	k := t.kids.byPid[e.Pid]
	if k == nil {
		return fmt.Errorf("exit report %q for a pid the template did not fork", rec)
	}
	select {
	case <-k.exited:
		return fmt.Errorf("second exit report %q", rec)
	default:
	}
	k.status = e.Status
	close(k.exited)
	return nil
}

// childProc is the worker.ExitSource of a fork-child worker.
type childProc struct {
	t       *templateProc
	pid     int
	k       *kid
	adopted bool // the template died first: the worker is the watchdog's child now
}

// AwaitExit waits for the template's exit report or, should the template
// end first, for the worker as the watchdog's own child: the template's end
// kills it (PR_SET_PDEATHSIG) and re-parents it to the watchdog.
func (c *childProc) AwaitExit() {
	select {
	case <-c.k.exited:
		return
	case <-c.t.dead:
	}
	<-c.t.w.Exited // the template reaped: its children were re-parented before
	select {
	case <-c.k.exited: // reported before the template ended, still a zombie
	default:
	}
	c.adopted = true
	proc.WaitExitNoReap(c.pid)
}

// Reap tells the template to reap the worker, or reaps it when it is the
// watchdog's own child.
func (c *childProc) Reap() (string, error) {
	defer c.t.dropKid(c.pid)
	if !c.adopted {
		if _, err := c.t.conn.Write(reapRecord(c.pid)); err == nil {
			return c.k.status, nil
		}
		// The template ended after its report: the zombie is the watchdog's.
		<-c.t.w.Exited
	}
	var ws unix.WaitStatus
	for {
		_, err := unix.Wait4(c.pid, &ws, 0, nil)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			if c.k.status != "" {
				return c.k.status, nil
			}
			return "", fmt.Errorf("reaping pid %d: %v", c.pid, err)
		}
		break
	}
	if c.k.status != "" {
		return c.k.status, nil
	}
	if ws.Signaled() {
		return "signal: " + ws.Signal().String(), nil
	}
	return fmt.Sprintf("exit status %d", ws.ExitStatus()), nil
}

// checkChildAnswer is the pid check of a fork-child answer: the worker must
// be the template's child, not any process (the template itself, or a
// worker the watchdog started). The template cannot have reaped it yet.
func checkChildAnswer(t *templateProc, pid int) error {
	if proc.ParentOf(pid) == t.w.Pid {
		return nil
	}
	return fmt.Errorf("pid %d is not the template's child", pid)
}

// forkRecord is the fork request for t: the single fork when t can and
// isolation asks for it (§2.6, §2.7), whose worker makes its own temporary
// directory, or the double fork, which names it.
func forkRecord(t *templateProc, slot int, tmpdir string) []byte {
	if t.child {
		return forkChildRequest(slot, t.unasked)
	}
	return wire.ForkRequest(slot, tmpdir)
}
