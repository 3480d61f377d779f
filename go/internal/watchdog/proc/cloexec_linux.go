package proc

import (
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// MarkInheritedCloseOnExec marks every descriptor from 3 up close-on-exec,
// so that a worker starts with exactly the descriptors PROTOCOL.md §2.2
// names. Go cannot run code in the child between fork and exec, and
// os/exec passes on every descriptor the watchdog itself inherited without
// close-on-exec (a shell's fds, a test's open files). The watchdog's own
// descriptors are close-on-exec already; the worker's are dup'ed into place
// by os/exec, which clears the flag on the copy.
func MarkInheritedCloseOnExec() error {
	err := unix.CloseRange(3, ^uint(0), unix.CLOSE_RANGE_CLOEXEC)
	if err == nil {
		return nil
	}
	// Before Linux 5.11: one fcntl per open descriptor.
	entries, rerr := os.ReadDir("/proc/self/fd")
	if rerr != nil {
		return err
	}
	for _, e := range entries {
		fd, cerr := strconv.Atoi(e.Name())
		if cerr != nil || fd < 3 {
			continue
		}
		if flags, ferr := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); ferr == nil && flags&unix.FD_CLOEXEC == 0 {
			unix.FcntlInt(uintptr(fd), unix.F_SETFD, flags|unix.FD_CLOEXEC)
		}
	}
	return nil
}
