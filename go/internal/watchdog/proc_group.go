package watchdog

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// killGroup kills the process group led by pid (PROTOCOL.md §2.1). A forked
// worker makes its group itself (§2.6): until it has, only the process can
// be killed.
func killGroup(pid int) {
	if err := syscall.Kill(-pid, syscall.SIGKILL); err == syscall.ESRCH {
		syscall.Kill(pid, syscall.SIGKILL)
	}
}

// isChild reports whether pid is a child of the watchdog, without reaping
// it: a template that named another process would have it killed and waited
// for as a worker.
func isChild(pid int) bool {
	var info unix.Siginfo
	for {
		err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOHANG|unix.WNOWAIT, nil)
		if err != unix.EINTR {
			return err == nil
		}
	}
}
