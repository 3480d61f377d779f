package proc

import (
	"os"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// SysProcAttr puts a worker in a process group of its own and asks the kernel
// to kill it if the watchdog dies. PROTOCOL.md §2.1.
func SysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// CanPeekExit reports whether waitExitNoReap works here.
const CanPeekExit = true

// WaitExitNoReap blocks until the process pid has exited, leaving it a
// zombie: while it is one, its pid and process group id cannot be reused, so
// the caller can still signal the group safely.
func WaitExitNoReap(pid int) {
	var info unix.Siginfo
	for {
		err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if err != unix.EINTR {
			return
		}
	}
}

// PollPipe reports, without blocking, whether the read end f has bytes
// waiting (data) or its writers are all gone (hup). It runs before every
// dispatch (§9.6), so the poll is a raw system call, as rawio's reads are:
// it never blocks, and syscall.Syscall's scheduler entry would wake the
// runtime's sysmon thread.
func PollPipe(f *os.File) (data, hup bool) {
	rc, err := f.SyscallConn()
	if err != nil {
		return false, false
	}
	rc.Control(func(fd uintptr) {
		pfd := unix.PollFd{Fd: int32(fd), Events: unix.POLLIN}
		var zero unix.Timespec
		for {
			n, _, errno := syscall.RawSyscall6(unix.SYS_PPOLL, uintptr(unsafe.Pointer(&pfd)), 1,
				uintptr(unsafe.Pointer(&zero)), 0, 0, 0)
			if errno == unix.EINTR {
				continue
			}
			if errno != 0 || n == 0 {
				return
			}
			data = pfd.Revents&unix.POLLIN != 0
			hup = pfd.Revents&(unix.POLLHUP|unix.POLLERR) != 0
			return
		}
	})
	return data, hup
}

// IsChild reports whether pid is a child of the watchdog, without reaping
// it: a template that named another process would have it killed and waited
// for as a worker.
func IsChild(pid int) bool {
	var info unix.Siginfo
	for {
		err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOHANG|unix.WNOWAIT, nil)
		if err != unix.EINTR {
			return err == nil
		}
	}
}
