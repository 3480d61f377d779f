package rawio

import (
	"errors"
	"io"
	"os"
	"syscall"
)

// A hold keeps one wait of the poller open across reads (issue 29).
//
// Why: the runtime's poller forgets what it knew of a descriptor's
// readability each time a wait begins (RawConn.Read resets it), so every
// Read must try the descriptor before it may wait. Between a client's
// keep-alive requests that try always finds the socket empty: a read(2)
// answering EAGAIN per request, which a C epoll loop does not make. Inside
// Hold, the wait begun before the first read stays open: a read that came
// back short (n < len(p)) or empty emptied the socket after the wait
// began, so bytes that come later are news to the poller, and the next
// read may wait for them without trying first.

// ErrWouldWait is what Read returns inside Hold when there is nothing to
// read without waiting: the holder's fn returns false, to wait.
var ErrWouldWait = errors.New("rawio: nothing to read without waiting")

// ErrNoHold is Hold's error for a descriptor read through its own file or
// connection (Plain, a blocking one, or off Linux): the caller reads as
// usual instead.
var ErrNoHold = errors.New("rawio: this descriptor cannot be held")

// hold is an FD's state while Hold runs: the descriptor, whether its last
// read emptied it, and the holder's fn.
type hold struct {
	on      bool
	fd      uintptr
	drained bool
	fn      func() bool
	cb      func(fd uintptr) bool // f.held, bound once
}

// CanHold reports whether Hold is available.
func (f *FD) CanHold() bool { return f.plain == nil }

// Hold calls fn, inside one wait of the poller for the descriptor's
// readability, until fn returns true; each time it returns false, Hold
// waits until the descriptor is readable (or its read deadline passes, or
// it is closed: then Hold returns that error, as Read would, and fn is not
// called again). While fn runs, Read reads at most once per wake-up and
// returns ErrWouldWait where it would have waited, so fn must return false
// then; fn must not make any other wait of its own on the descriptor's
// readability. Writes are unaffected.
func (f *FD) Hold(fn func() bool) error {
	if f.plain != nil {
		return ErrNoHold
	}
	f.hd.fn = fn
	err := f.rc.Read(f.hd.cb)
	f.hd.fn = nil
	if err != nil {
		return f.fail("read", err)
	}
	return nil
}

// held is the poller's callback for Hold: at its first call the wait has
// just begun; at every later one the descriptor became readable.
func (f *FD) held(fd uintptr) bool {
	f.hd.on, f.hd.fd, f.hd.drained = true, fd, false
	done := f.hd.fn()
	f.hd.on = false
	return done
}

// WouldWait reports whether Read would return ErrWouldWait now: inside
// Hold, with the descriptor seen empty since the last wake-up. A reader
// with work to do before its read (a lock, a deadline) skips it.
func (f *FD) WouldWait() bool { return f.hd.on && f.hd.drained }

// heldRead is Read inside Hold: no read(2) once the descriptor was seen
// empty since the last wake-up.
func (f *FD) heldRead(p []byte) (int, error) {
	if f.hd.drained {
		return 0, ErrWouldWait
	}
	n, e := readRaw(f.hd.fd, p)
	switch {
	case e == syscall.EAGAIN:
		f.hd.drained = true
		return 0, ErrWouldWait
	case e != 0:
		return 0, f.fail("read", os.NewSyscallError("read", e))
	case n == 0:
		return 0, io.EOF
	}
	// A read that did not fill p took all there was (a pipe's and a
	// stream socket's read(2) return what is there, up to len(p)).
	f.hd.drained = n < len(p)
	return n, nil
}
