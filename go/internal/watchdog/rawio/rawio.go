// Package rawio reads and writes the hot path's descriptors (a lane's pipes,
// a client's socket) with raw system calls inside the runtime's poller.
//
// Why: os.File and net.Conn reach the kernel through syscall.Syscall, whose
// entersyscall wakes the runtime's sysmon thread whenever every P was idle,
// as they are between a client's keep-alive requests at c=1. On the
// watchdog that was 1.8 futex, nanosleep and sched_yield calls per request,
// on a thread of its own, beside the 8 calls the hop needs (issue 29). A
// non-blocking descriptor never blocks in read or write, so the runtime
// need not be told: RawSyscall, through syscall.RawConn, keeps the poller's
// deadlines and wake-ups and skips the rest.
//
// Everything else about the descriptor (deadlines, Close, the splice of
// hijack.go) stays with its os.File or net.Conn: an FD is only a faster
// Read and Write beside it.
//
// Layer 0 of the watchdog (doc.go).
package rawio

import (
	"io"
	"net"
	"os"
	"syscall"
)

// FD reads and writes one descriptor. It is not safe for concurrent use by
// two readers or two writers, as neither is a reader on a bufio.Reader;
// one reader and one writer may run at once.
type FD struct {
	// plain is the descriptor's own Read and Write, used instead when it
	// is not non-blocking: a raw read of a blocking descriptor would stall
	// its thread without the scheduler knowing.
	plain io.ReadWriter
	rc    syscall.RawConn
	// wrap turns an error of the poller or the kernel into the one the
	// descriptor's own Read or Write would have returned.
	wrap func(op string, err error) error
	rd   call
	wr   call
	hd   hold  // hold.go
	aw   await // await.go
	look Look  // what the first read(2) after WatchLook found (await.go)
}

// call is one Read's or Write's state, which the callback the poller runs
// fills: bound once (fn), so that no call allocates a closure.
type call struct {
	p     []byte
	n     int
	errno syscall.Errno
	fn    func(fd uintptr) bool
}

// New makes an FD over rc. wrap (nil for none) makes its errors look like
// those of the os.File or net.Conn rc came from.
func New(rc syscall.RawConn, wrap func(op string, err error) error) *FD {
	f := &FD{rc: rc, wrap: wrap}
	f.rd.fn = f.readOnce
	f.wr.fn = f.writeSome
	f.hd.cb = f.held
	f.aw.cb = f.awaited
	return f
}

// Read reads once, waiting in the poller until the descriptor is readable
// or its read deadline passes. It returns io.EOF at the end.
func (f *FD) Read(p []byte) (int, error) {
	if f.plain != nil {
		return f.plain.Read(p)
	}
	if len(p) == 0 {
		return 0, nil
	}
	if f.hd.on {
		return f.heldRead(p)
	}
	f.rd = call{p: p, fn: f.rd.fn}
	err := f.rc.Read(f.rd.fn)
	n, errno := f.rd.n, f.rd.errno
	f.rd.p = nil
	switch {
	case err != nil:
		return 0, f.fail("read", err)
	case errno != 0:
		return 0, f.fail("read", os.NewSyscallError("read", errno))
	case n == 0:
		return 0, io.EOF
	}
	return n, nil
}

// Write writes all of p, waiting in the poller while the descriptor is
// full, until its write deadline passes.
func (f *FD) Write(p []byte) (int, error) {
	if f.plain != nil {
		return f.plain.Write(p)
	}
	if len(p) == 0 {
		return 0, nil
	}
	f.wr = call{p: p, fn: f.wr.fn}
	err := f.rc.Write(f.wr.fn)
	n, errno := f.wr.n, f.wr.errno
	f.wr.p = nil
	switch {
	case err != nil:
		return n, f.fail("write", err)
	case errno != 0:
		return n, f.fail("write", os.NewSyscallError("write", errno))
	}
	return n, nil
}

// readOnce is the poller's callback for Read: one read(2) (readRaw);
// false, to wait for readability, on EAGAIN.
func (f *FD) readOnce(fd uintptr) bool {
	c := &f.rd
	n, e := readRaw(fd, c.p)
	if f.look == lookPending {
		f.look = LookFound
		if e == syscall.EAGAIN {
			f.look = LookEmpty
		}
	}
	switch e {
	case 0:
		c.n = n
	case syscall.EAGAIN:
		return false
	default:
		c.errno = e
	}
	return true
}

func (f *FD) fail(op string, err error) error {
	if f.wrap != nil {
		return f.wrap(op, err)
	}
	return err
}

// Plain makes an FD that reads and writes through rw itself: a descriptor
// rawio cannot reach (a test's in-memory connection).
func Plain(rw io.ReadWriter) *FD { return &FD{plain: rw} }

// File makes an FD over file, a descriptor in the runtime's poller (a pipe
// os.Pipe made). Its errors are those of file's Read and Write: an
// *os.PathError, with os.ErrClosed once file is closed. A file that is not
// non-blocking is read and written through file itself.
func File(file *os.File) *FD {
	rc, err := file.SyscallConn()
	if err != nil || !nonBlocking(rc) {
		return &FD{plain: file}
	}
	name := file.Name()
	return New(rc, func(op string, err error) error {
		if err == errFileClosing {
			err = os.ErrClosed
		}
		return &os.PathError{Op: op, Path: name, Err: err}
	})
}

// errFileClosing is the poller's error for a closed os.File, which
// File.Read reports as os.ErrClosed but RawConn returns as it is. It is
// not exported, so it is found once, by reading a pipe closed for the
// purpose; rawio_test.go checks that a closed File reads as os.ErrClosed.
var errFileClosing = func() error {
	r, w, err := os.Pipe()
	if err != nil {
		return nil
	}
	defer w.Close()
	rc, err := r.SyscallConn()
	if err != nil {
		r.Close()
		return nil
	}
	r.Close()
	return rc.Read(func(uintptr) bool { return true })
}()

// Conn makes an FD over c, a connection from net (a *net.TCPConn). Its
// errors are those of c's Read and Write: a *net.OpError, whose Err is
// net.ErrClosed once c is closed and os.ErrDeadlineExceeded at a deadline;
// io.EOF bare.
func Conn(c interface {
	net.Conn
	SyscallConn() (syscall.RawConn, error)
}) *FD {
	rc, err := c.SyscallConn()
	if err != nil || !nonBlocking(rc) {
		return &FD{plain: c}
	}
	local, remote := c.LocalAddr(), c.RemoteAddr()
	return New(rc, func(op string, err error) error {
		return &net.OpError{Op: op, Net: local.Network(), Source: local, Addr: remote, Err: err}
	})
}
