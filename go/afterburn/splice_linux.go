package afterburn

import (
	"io"
	"os"
	"syscall"
	"unsafe"
)

// An echo (io.Copy(w, r.Body) with a Content-Length response) moves the body from the
// request pipe to the response pipe with splice(2): the kernel hands the pipe's pages
// on, and neither the library nor the kernel copies a byte of it. Both descriptors are
// pipes on the runtime's poller (fd_unix.go); a splice that would block waits there,
// for the request pipe to hold bytes or the response pipe to have room.

const (
	spliceMove     = 0x1 // SPLICE_F_MOVE
	spliceNonblock = 0x2 // SPLICE_F_NONBLOCK
	// spliceMin is the smallest body worth splicing; below it the copy is cheaper
	// than the set-up.
	spliceMin = 64 << 10
	// spliceMax bounds one splice: lane 1's pipes hold 1 MiB.
	spliceMax = 1 << 20
)

// spliceBody moves what is left of a Content-Length body into w by splice and returns
// the bytes it moved and whether it is done; when not, the caller copies the rest (the
// descriptors are no pipes) and n counts the read-ahead bytes it wrote first. It splices
// only what w can carry whole: a response whose framing is, or can be made, a
// Content-Length that the body does not overrun, so every rule of Write (§4.4) holds.
func spliceBody(b *body, w *response) (int64, bool, error) {
	c := b.c
	if !c.pipes() || b.chunked || b.done || b.err != nil || b.remain < spliceMin || w.err != nil || w.done {
		return 0, false, nil
	}
	if !w.wroteHeader {
		w.WriteHeader(200)
	}
	if w.bodyless || w.clen < 0 || w.written+b.remain > w.clen || w.committed && w.chunked {
		return 0, false, nil
	}
	in, out := rawFD(c.inFile), rawFD(c.outFile)
	if !w.committed {
		w.commit(false) // with w.clen set: Content-Length framing
	}
	var total int64 // bytes moved
	spliced := false
	// Body bytes read ahead with the head go first, through the write buffer.
	if k := int(min(int64(c.br.Buffered()), b.remain)); k > 0 {
		p, _ := c.br.Peek(k)
		if _, err := w.Write(p); err != nil {
			return 0, true, err
		}
		c.br.Discard(k)
		b.remain -= int64(k)
		total += int64(k)
	}
	if err := w.flush(); err != nil {
		return total, true, err
	}
	inFile, outFile, err := c.pollFiles()
	if err != nil {
		return total, true, err
	}
	if !c.polled {
		defer c.endPolled(in, out)
	}
	inRC, err := inFile.SyscallConn()
	if err != nil {
		return total, true, err
	}
	outRC, err := outFile.SyscallConn()
	if err != nil {
		return total, true, err
	}
	for b.remain > 0 {
		n, serr, rerr, werr := splicePolled(inRC, outRC, in, out, b.remain)
		if rerr != nil {
			return total, true, rerr
		}
		if werr != nil {
			w.err = werr
			return total, true, werr
		}
		switch {
		case serr == syscall.EAGAIN:
			continue
		case serr != nil && !spliced && (serr == syscall.EINVAL || serr == syscall.ENOSYS):
			// Not pipes after all (a regular file in a test): copy. The head and
			// the read-ahead went out through the write buffer, as Write would.
			return total, false, nil
		case serr != nil:
			w.err = os.NewSyscallError("splice", serr)
			return total, true, w.err
		case n == 0:
			return total, true, b.fail(truncated("the request body", io.EOF))
		}
		spliced = true
		b.remain -= n
		total += n
		w.written += n
		c.out.n += n
	}
	b.done = true
	return total, true, nil
}

// splicePolled makes one splice of at most remain bytes between pipes on the runtime's
// poller, waiting there for input or room as needed. It returns the bytes moved and
// the splice's error (EAGAIN: try again), or the error of the wait on the request
// pipe (rerr) or on the response pipe (werr).
func splicePolled(inRC, outRC syscall.RawConn, in, out int, remain int64) (n int64, serr, rerr, werr error) {
	move := func() bool {
		m, e := syscall.Splice(in, nil, out, nil, int(min(remain, spliceMax)), spliceMove|spliceNonblock)
		n, serr = int64(m), e
		return serr != syscall.EAGAIN
	}
	full := false
	// The attempt is made inside the poller's callback, after it reset the
	// descriptor's readiness, so a byte or a room that comes after a failed
	// attempt wakes the wait (the edge-triggered pattern of os.File's own I/O).
	serr = syscall.EBADF // unless a callback runs: the pipe was closed
	if err := inRC.Read(func(uintptr) bool {
		if move() {
			return true
		}
		// EAGAIN: the request pipe is empty with a writer left, or the response pipe
		// is full. At the request pipe's end a splice that finds no room fails so too
		// (the kernel looks for room after it looks for input), and the end came
		// once, as an edge that may be gone: then room is what to wait for.
		full = !awaitsInput(in)
		return full
	}); err != nil {
		return 0, nil, err, nil
	}
	if serr == syscall.EAGAIN && full {
		if err := outRC.Write(func(uintptr) bool {
			return move() || awaitsInput(in) // empty now: back to waiting for input
		}); err != nil {
			return 0, nil, nil, err
		}
	}
	return n, serr, nil, nil
}

// pollFiles returns the lane's pipes as files on the runtime's poller, for a splice
// loop. A lone lane reads and writes blocking pipes (openLanes), but a splice that sleeps
// in the kernel each time the request pipe runs dry wakes once for nearly every page the
// watchdog writes: BenchmarkSpliceEcho, 16 MiB echoes with 1 MiB pipes, made ~3,500
// context switches per echo and 450-630 MB/s that way, against ~260 and 1,170-1,940
// MB/s on the poller, whose wait first looks for other work. So the first echo of a
// lone lane makes a second descriptor of each pipe, on the poller; while an echo runs
// the pipes are non-blocking (O_NONBLOCK belongs to the pipe's file description, which
// both descriptors share), and endPolled makes them blocking again. Nothing else reads
// or writes the lane meanwhile: the head and the read-ahead were flushed before.
func (c *conn) pollFiles() (in, out *os.File, err error) {
	if c.polled {
		return c.inFile, c.outFile, nil
	}
	if c.pollIn == nil {
		if c.pollIn, err = pollDup(c.inFile, "afterburn-requests-splice"); err != nil {
			return nil, nil, err
		}
		if c.pollOut, err = pollDup(c.outFile, "afterburn-responses-splice"); err != nil {
			c.pollIn.Close()
			c.pollIn = nil
			return nil, nil, err
		}
		return c.pollIn, c.pollOut, nil // pollDup made both non-blocking
	}
	if err := syscall.SetNonblock(rawFD(c.pollIn), true); err != nil {
		return nil, nil, os.NewSyscallError("fcntl", err)
	}
	if err := syscall.SetNonblock(rawFD(c.pollOut), true); err != nil {
		syscall.SetNonblock(rawFD(c.pollIn), false)
		return nil, nil, os.NewSyscallError("fcntl", err)
	}
	return c.pollIn, c.pollOut, nil
}

// endPolled makes a lone lane's pipes blocking again after a splice loop.
func (c *conn) endPolled(in, out int) {
	syscall.SetNonblock(in, false)
	syscall.SetNonblock(out, false)
}

// pollDup returns a close-on-exec duplicate of f's descriptor as a file on the poller,
// leaving the pipe non-blocking (os.NewFile polls only a non-blocking descriptor).
func pollDup(f *os.File, name string) (*os.File, error) {
	fd, _, errno := syscall.Syscall(syscall.SYS_FCNTL, uintptr(rawFD(f)), syscall.F_DUPFD_CLOEXEC, 3)
	if errno != 0 {
		return nil, os.NewSyscallError("fcntl", errno)
	}
	if err := syscall.SetNonblock(int(fd), true); err != nil {
		syscall.Close(int(fd))
		return nil, os.NewSyscallError("fcntl", err)
	}
	return os.NewFile(fd, name), nil
}

// closePolled closes the descriptors pollFiles made, if any, with the lane's own: the
// watchdog sees the response pipe end only once every descriptor of it is closed.
func (c *conn) closePolled() {
	if c.pollIn != nil {
		c.pollIn.Close()
		c.pollOut.Close()
		c.pollIn, c.pollOut = nil, nil
	}
}

// pipes reports whether the lane's two descriptors are pipes, which splice needs (one
// fstat each, the first time).
func (c *conn) pipes() bool {
	if c.spliceOK == 0 {
		c.spliceOK = -1
		if isPipe(c.inFile) && isPipe(c.outFile) {
			c.spliceOK = 1
			// On the poller, or blocking (a lone lane, openLanes): how a splice waits.
			c.polled = onPoller(c.inFile) && onPoller(c.outFile)
		}
	}
	return c.spliceOK > 0
}

func isPipe(f *os.File) bool {
	if f == nil {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeNamedPipe != 0
}

// rawFD returns f's descriptor without the blocking mode that f.Fd sets, or -1.
func rawFD(f *os.File) int {
	rc, err := f.SyscallConn()
	if err != nil {
		return -1
	}
	fd := -1
	rc.Control(func(u uintptr) { fd = int(u) })
	return fd
}

// awaitsInput reports whether the pipe fd is empty and still has a writer: a splice
// from it can go on only once it holds bytes. One ppoll(2) with a zero timeout, which
// reports the end (no writer left) as POLLHUP.
func awaitsInput(fd int) bool {
	pfd := struct {
		fd              int32
		events, revents int16
	}{fd: int32(fd), events: pollIn}
	var zero syscall.Timespec
	for {
		n, _, errno := syscall.Syscall6(syscall.SYS_PPOLL, uintptr(unsafe.Pointer(&pfd)), 1,
			uintptr(unsafe.Pointer(&zero)), 0, 0, 0)
		switch {
		case errno == syscall.EINTR:
			continue
		case errno != 0:
			return false // the splice that follows meets the fault
		}
		return n == 0 || pfd.revents&(pollIn|pollHup|pollErr) == 0
	}
}

// poll(2)'s event bits, the same on every Linux architecture.
const (
	pollIn  = 0x1
	pollErr = 0x8
	pollHup = 0x10
)
