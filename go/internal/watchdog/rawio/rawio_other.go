//go:build !linux

package rawio

import "syscall"

// Off Linux the callbacks make the ordinary calls (syscall.Read and Write
// enter the scheduler as os.File's do): the same semantics, none of the
// saving.

func readRaw(fd uintptr, p []byte) (int, syscall.Errno) {
	for {
		n, err := syscall.Read(int(fd), p)
		switch err {
		case nil:
			return n, 0
		case syscall.EINTR:
			continue
		}
		return 0, err.(syscall.Errno)
	}
}

func (f *FD) writeSome(fd uintptr) bool {
	c := &f.wr
	for c.n < len(c.p) {
		n, err := syscall.Write(int(fd), c.p[c.n:])
		switch err {
		case nil:
			c.n += n
		case syscall.EINTR:
		case syscall.EAGAIN:
			return false
		default:
			c.errno = err.(syscall.Errno)
			return true
		}
	}
	return true
}

// nonBlocking is false off Linux: every FD reads and writes through its
// file or connection.
func nonBlocking(rc syscall.RawConn) bool { return false }
