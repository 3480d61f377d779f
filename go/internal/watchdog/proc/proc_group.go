package proc

import "syscall"

// KillGroup kills the process group led by pid (PROTOCOL.md §2.1). A forked
// worker makes its group itself (§2.6): until it has, only the process can
// be killed.
func KillGroup(pid int) {
	if err := syscall.Kill(-pid, syscall.SIGKILL); err == syscall.ESRCH {
		syscall.Kill(pid, syscall.SIGKILL)
	}
}
