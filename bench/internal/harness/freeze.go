package harness

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// Every configuration is started once and stays up for the whole run, but only the one being
// measured may run: an idle configuration still wakes (JVM compiler and periodic threads, Go's
// sysmon and GC, Node's timers) on the CPU under test, and those wake-ups land in the tail of
// whichever configuration is measured. So between its measurements a configuration is frozen
// with SIGSTOP, the whole process tree, as the watchdog puts each worker in a process group
// of its own, and it is thawed with SIGCONT just before its next measurement.

// freeze stops s and every process it started.
func (s *server) freeze() error {
	root := s.cmd.Process.Pid
	// The root first, so that it starts nothing more while its descendants are found.
	if err := syscall.Kill(root, syscall.SIGSTOP); err != nil {
		return fmt.Errorf("%s: SIGSTOP: %v", s.name, err)
	}
	for _, pid := range descendants(root) {
		if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil && err != syscall.ESRCH {
			return fmt.Errorf("%s: SIGSTOP %d: %v", s.name, pid, err)
		}
	}
	return nil
}

// thaw continues what freeze stopped: descendants first, so that the root finds its workers
// running when it wakes.
func (s *server) thaw() error {
	root := s.cmd.Process.Pid
	pids := descendants(root)
	for i := len(pids) - 1; i >= 0; i-- {
		if err := syscall.Kill(pids[i], syscall.SIGCONT); err != nil && err != syscall.ESRCH {
			return fmt.Errorf("%s: SIGCONT %d: %v", s.name, pids[i], err)
		}
	}
	if err := syscall.Kill(root, syscall.SIGCONT); err != nil {
		return fmt.Errorf("%s: SIGCONT: %v", s.name, err)
	}
	return nil
}

// descendants lists the processes below pid, parents before their children, from Linux's
// /proc/PID/task/TID/children. Elsewhere the list is empty and only the root is frozen.
func descendants(pid int) []int {
	var out []int
	queue := []int{pid}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", p))
		for _, t := range tasks {
			b, err := os.ReadFile(t)
			if err != nil {
				continue
			}
			for _, f := range strings.Fields(string(b)) {
				if c, err := strconv.Atoi(f); err == nil {
					out = append(out, c)
					queue = append(queue, c)
				}
			}
		}
	}
	return out
}
