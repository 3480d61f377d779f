//go:build !linux

package proc

import (
	"os"
	"syscall"
)

// SysProcAttr puts a worker in a process group of its own. PROTOCOL.md §2.1;
// PR_SET_PDEATHSIG exists only on Linux.
func SysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}

// CanPeekExit reports whether WaitExitNoReap works here. Off Linux the group
// is not signalled after the worker exits.
const CanPeekExit = false

func WaitExitNoReap(pid int) {}

// PollPipe is not implemented off Linux: unsolicited output is then found
// only in the watchdog's own buffer.
func PollPipe(f *os.File) (data, hup bool) { return false, false }

// IsChild is not known off Linux, where fork mode does not run (§2.6).
func IsChild(pid int) bool { return false }
