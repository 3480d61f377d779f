//go:build !linux

package watchdog

import (
	"os"
	"syscall"
)

// sysProcAttr puts a worker in a process group of its own. PROTOCOL.md §2.1;
// PR_SET_PDEATHSIG exists only on Linux.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}

// canPeekExit reports whether waitExitNoReap works here. Off Linux the group
// is not signalled after the worker exits.
const canPeekExit = false

func waitExitNoReap(pid int) {}

// pollPipe is not implemented off Linux: unsolicited output is then found
// only in the watchdog's own buffer.
func pollPipe(f *os.File) (data, hup bool) { return false, false }
