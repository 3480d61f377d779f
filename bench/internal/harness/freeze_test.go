package harness

import (
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// procState is the state letter of /proc/PID/stat: T when stopped.
func procState(t *testing.T, pid int) string {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	return strings.Fields(s[strings.LastIndexByte(s, ')')+1:])[0]
}

// waitStates waits until every pid is (stopped) or is not (!stopped) in state T.
func waitStates(t *testing.T, pids []int, stopped bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for _, pid := range pids {
		for (procState(t, pid) == "T") != stopped {
			if time.Now().After(deadline) {
				t.Fatalf("pid %d in state %s; want stopped=%v", pid, procState(t, pid), stopped)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
}

func TestFreezeStopsTheWholeTreeAndThawContinuesIt(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc")
	}
	// A root with a child in a process group of its own (as the watchdog's workers are), and a
	// grandchild.
	cmd := exec.Command("sh", "-c", `setsid sh -c 'sleep 60 & wait' & sleep 60 & wait`)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, pid := range append(descendants(cmd.Process.Pid), cmd.Process.Pid) {
			syscall.Kill(pid, syscall.SIGKILL)
		}
		cmd.Wait()
	})
	s := &server{name: "tree", cmd: cmd}
	var tree []int
	for deadline := time.Now().Add(5 * time.Second); len(tree) < 3; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("descendants %v; want the 3 processes below the root", tree)
		}
		tree = descendants(cmd.Process.Pid)
	}
	all := append([]int{cmd.Process.Pid}, tree...)

	if err := s.freeze(); err != nil {
		t.Fatal(err)
	}
	waitStates(t, all, true)
	if err := s.thaw(); err != nil {
		t.Fatal(err)
	}
	waitStates(t, all, false)
}
