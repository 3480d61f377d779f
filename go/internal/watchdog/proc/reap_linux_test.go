package proc

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestReapOrphans: as PID 1 (here: a child subreaper) the watchdog reaps
// orphans but never a worker's exit status.
func TestReapOrphans(t *testing.T) {
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		t.Skipf("PR_SET_CHILD_SUBREAPER: %v", err)
	}
	defer unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0)

	worker := exec.Command("/bin/sh", "-c", "read x; exit 7")
	stdin, _ := worker.StdinPipe()
	if err := StartProcess(worker); err != nil {
		t.Fatal(err)
	}

	// The orphan: a grandchild whose parent exits at once.
	maker := exec.Command("/bin/sh", "-c", "/bin/sh -c 'exit 0' & echo $!")
	var out strings.Builder
	maker.Stdout = &out
	if err := StartProcess(maker); err != nil {
		t.Fatal(err)
	}
	if err := maker.Wait(); err != nil {
		t.Fatal(err)
	}
	ForgetProcess(maker.Process.Pid)
	orphan, err := strconv.Atoi(strings.TrimSpace(out.String()))
	if err != nil {
		t.Fatalf("orphan pid %q", out.String())
	}
	WaitExitNoReap(orphan) // it is our child now; wait for its exit, not reaping it
	reapOrphans()
	if _, err := os.Stat("/proc/" + strconv.Itoa(orphan)); !os.IsNotExist(err) {
		t.Fatalf("orphan %d not reaped", orphan)
	}

	// The worker exits: its zombie is left to its own Wait.
	stdin.Close()
	WaitExitNoReap(worker.Process.Pid)
	for range 3 {
		reapOrphans()
	}
	err = worker.Wait()
	ForgetProcess(worker.Process.Pid)
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 7 {
		t.Fatalf("worker Wait: %v; want exit status 7 (not stolen by the reaper)", err)
	}
}

// TestReapLeavesUnknownChildrenWhileForking: PROTOCOL.md §2.6. A forked
// worker is the watchdog's child before the template's answer names it; while
// a fork is outstanding the reaper must leave every unknown child alone.
func TestReapLeavesUnknownChildrenWhileForking(t *testing.T) {
	child := exec.Command("/bin/sh", "-c", "exit 3")
	if err := child.Start(); err != nil { // not startProcess: an unknown child
		t.Fatal(err)
	}
	pid := child.Process.Pid
	WaitExitNoReap(pid)
	Procs.Mu.Lock()
	Procs.Forking++
	Procs.Mu.Unlock()
	reapOrphans()
	Procs.Mu.Lock()
	Procs.Forking--
	Procs.Mu.Unlock()
	if !IsChild(pid) {
		t.Fatalf("unknown child %d reaped while a fork was outstanding", pid)
	}
	reapOrphans()
	if IsChild(pid) {
		t.Fatalf("unknown child %d left a zombie once no fork was outstanding", pid)
	}
	child.Wait() // ECHILD: the reaper has it
}
