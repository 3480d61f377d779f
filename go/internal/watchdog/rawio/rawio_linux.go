package rawio

import (
	"syscall"
	"unsafe"
)

// readRaw is one read(2) of fd into p (not empty), retried on EINTR.
func readRaw(fd uintptr, p []byte) (int, syscall.Errno) {
	for {
		n, _, e := syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
		if e != syscall.EINTR {
			return int(n), e
		}
	}
}

// writeSome is the poller's callback for Write: write(2) until all of p is
// out; false, to wait for writability, on EAGAIN.
func (f *FD) writeSome(fd uintptr) bool {
	c := &f.wr
	for c.n < len(c.p) {
		rest := c.p[c.n:]
		n, _, e := syscall.RawSyscall(syscall.SYS_WRITE, fd, uintptr(unsafe.Pointer(&rest[0])), uintptr(len(rest)))
		switch e {
		case 0:
			c.n += int(n)
		case syscall.EINTR:
		case syscall.EAGAIN:
			return false
		default:
			c.errno = e
			return true
		}
	}
	return true
}

// nonBlocking reports whether rc's descriptor has O_NONBLOCK, as the
// runtime's poller sets on the descriptors it watches.
func nonBlocking(rc syscall.RawConn) bool {
	var flags int
	var errno syscall.Errno
	if err := rc.Control(func(fd uintptr) {
		r, _, e := syscall.RawSyscall(syscall.SYS_FCNTL, fd, syscall.F_GETFL, 0)
		flags, errno = int(r), e
	}); err != nil || errno != 0 {
		return false
	}
	return flags&syscall.O_NONBLOCK != 0
}
