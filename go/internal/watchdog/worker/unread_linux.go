package worker

import "golang.org/x/sys/unix"

// UnreadRequestBytes is how many bytes wait in the worker's request pipe,
// written by the watchdog and not yet read by the worker (FIONREAD, named
// TIOCINQ on Linux); -1 if unknown.
func (l *Lane) UnreadRequestBytes() int {
	rc, err := l.reqUnread.SyscallConn()
	if err != nil {
		return -1
	}
	n := -1
	rc.Control(func(fd uintptr) {
		if v, err := unix.IoctlGetInt(int(fd), unix.TIOCINQ); err == nil {
			n = v
		}
	})
	return n
}
