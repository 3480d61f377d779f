package proc

import (
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// orphan leaves a `sleep` behind as a request does: started by a shell that
// exits at once, so that it is re-parented to this process, a child
// subreaper as the watchdog is. In its own session (a daemon), or in the
// shell's process group, whose id is dead; killed and reaped at the end.
func orphan(t *testing.T, daemon bool) (pid, dead int) {
	t.Helper()
	script := "sleep 60 >/dev/null 2>&1 & echo $!"
	if daemon {
		script = "setsid sleep 60 >/dev/null 2>&1 & echo $!"
	}
	sh := exec.Command("/bin/sh", "-c", script)
	sh.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := sh.Output()
	if err != nil {
		t.Fatal(err)
	}
	if pid, err = strconv.Atoi(strings.TrimSpace(string(out))); err != nil {
		t.Fatalf("orphan pid %q", out)
	}
	t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL); syscall.Wait4(pid, nil, 0, nil) })
	return pid, sh.Process.Pid
}

func subreaper(t *testing.T) {
	t.Helper()
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		t.Skipf("PR_SET_CHILD_SUBREAPER: %v", err)
	}
	t.Cleanup(func() { unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0) })
}

func leftPid(left []leftProc, pid int) bool {
	return slices.ContainsFunc(left, func(lp leftProc) bool { return lp.Pid == pid })
}

// TestLeftBehindReadsTheChildrenAfresh: the look for leftovers (§2.7) reads
// the watchdog's children through a descriptor it keeps; each look must see
// the processes of that moment, never a list an earlier look read: a daemon
// and a process of the dead worker's group, each left after earlier looks,
// are found, and neither once it is gone.
func TestLeftBehindReadsTheChildrenAfresh(t *testing.T) {
	subreaper(t)
	const noWorker = 1 << 30 // a group no process is in
	if left := LeftBehind(noWorker); len(left) != 0 {
		t.Fatalf("LeftBehind before any leftover: %v; want none", left)
	}
	for _, daemon := range []bool{true, false} {
		for round := range 2 {
			pid, dead := orphan(t, daemon)
			if !daemon {
				if left := LeftBehind(noWorker); leftPid(left, pid) {
					t.Fatalf("LeftBehind(%d) = %v; want pid %d of group %d not among them", noWorker, left, pid, dead)
				}
			}
			if left := LeftBehind(dead); !leftPid(left, pid) {
				t.Fatalf("daemon %v, round %d: LeftBehind(%d) = %v; want pid %d among them", daemon, round+1, dead, left, pid)
			}
			syscall.Kill(pid, syscall.SIGKILL)
			syscall.Wait4(pid, nil, 0, nil)
			if left := LeftBehind(dead); leftPid(left, pid) {
				t.Fatalf("daemon %v, round %d: LeftBehind(%d) = %v after pid %d was reaped; want it gone", daemon, round+1, dead, left, pid)
			}
		}
	}
}

// TestChildrenListOutgrowsItsBuffer: a list longer than the buffer the last
// read needed is read whole, not cut.
func TestChildrenListOutgrowsItsBuffer(t *testing.T) {
	subreaper(t)
	children() // opened, its buffer sized
	mainChildren.size.Store(8)
	var pids []int
	for range 4 {
		pid, _ := orphan(t, false)
		pids = append(pids, pid)
	}
	got := children()
	for _, pid := range pids {
		if !slices.Contains(got, pid) {
			t.Fatalf("children() = %v; want pid %d among them", got, pid)
		}
	}
	if mainChildren.size.Load() <= 8 {
		t.Fatalf("buffer size %d after a long list; want it grown", mainChildren.size.Load())
	}
}
