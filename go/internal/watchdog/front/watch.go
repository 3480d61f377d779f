package front

import (
	"context"
	"errors"
	"os"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// clientWatch is the context of the requests the front takes on one
// connection: the connection's values, and a Done channel that notices the
// client leaving (PROTOCOL.md §10.6). net/http reads in the background for
// that while every handler runs; here the socket is watched only once
// someone waits on Done, which only a request queued for a lane does
// (pool.Acquire), so a request that finds a lane free pays nothing; and it
// begins only once the request has waited watchDelay, so a request that
// finds a lane within it pays a timer, not a goroutine, a grown stack and
// an interrupted wait: about 16,000 instructions, which at c=8 with 2
// workers, where most requests queue for tens of microseconds, came to
// 5,000 a request. The watch peeks
// (MSG_PEEK): it consumes no byte of a next request.
type clientWatch struct {
	context.Context // the connection's values
	c               *conn

	mu       sync.Mutex
	done     chan struct{} // made by the first Done of a request
	watching bool
	stopped  bool          // the request's I/O began: no watch from now on
	exited   chan struct{} // closed when the watch returns
	gone     bool          // the client was seen gone
	file     *os.File      // the watch's duplicate of the socket

	// The watch's start, watchDelay after Done: one timer for the
	// connection's life, armed for request number armedFor (reset counts
	// requests in gen), so that a timer that fires late for one request
	// starts nothing for the next.
	timer         *time.Timer
	pending       bool
	gen, armedFor uint64
}

// watchDelay is how long a request waits in the queue before its client's
// connection is watched (PROTOCOL.md §10.6).
const watchDelay = 5 * time.Millisecond

// reset readies w for the connection's next request.
func (w *clientWatch) reset() {
	w.mu.Lock()
	w.done, w.watching, w.stopped, w.exited, w.gone = nil, false, false, nil, false
	w.pending = false
	w.gen++
	w.mu.Unlock()
}

func (w *clientWatch) Done() <-chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.done == nil {
		w.done = make(chan struct{})
	}
	if !w.watching && !w.stopped && !w.pending {
		w.pending, w.armedFor = true, w.gen
		if w.timer == nil {
			w.timer = time.AfterFunc(watchDelay, w.begin)
		} else {
			w.timer.Reset(watchDelay)
		}
	}
	return w.done
}

// begin starts the watch of the request Done armed it for, unless that
// request's own I/O began meanwhile. The watch reads a descriptor of its
// own, a dup of the socket's, in the poller: the connection's goroutine
// may hold the socket's own wait (guard.Conn.Hold) while its request is
// queued. About five system calls (dup, poller in and out, close), for a
// request that waited watchDelay.
func (w *clientWatch) begin() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.pending || w.armedFor != w.gen || w.stopped || w.watching {
		return
	}
	w.pending = false
	f := w.dupSocket()
	if f == nil {
		return // no watch: the request waits its turn as net/http's would not notice either
	}
	raw, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return
	}
	w.file, w.watching, w.exited = f, true, make(chan struct{})
	go w.watch(raw)
}

// dupSocket is a non-blocking duplicate of the client's socket in the
// poller, or nil.
func (w *clientWatch) dupSocket() *os.File {
	sc, ok := w.c.gc.Conn.(syscall.Conn)
	if !ok {
		return nil
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return nil
	}
	nfd := -1
	if rc.Control(func(fd uintptr) {
		nfd, _ = unix.FcntlInt(fd, unix.F_DUPFD_CLOEXEC, 0)
	}) != nil || nfd < 0 {
		return nil
	}
	// O_NONBLOCK is the open file's, shared with the socket: os.NewFile
	// puts the duplicate in the poller, where a deadline can end its wait.
	f := os.NewFile(uintptr(nfd), "client-watch")
	if f.SetReadDeadline(time.Time{}) != nil {
		f.Close()
		return nil
	}
	return f
}

func (w *clientWatch) Err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.gone {
		return context.Canceled
	}
	return nil
}

// watch waits until the socket is readable and peeks: end of stream or an
// error means the client is gone; data means it is there (a next request).
// It returns when stop interrupts its wait.
func (w *clientWatch) watch(raw syscall.RawConn) {
	defer close(w.exited)
	gone := false
	var b [1]byte
	err := raw.Read(func(fd uintptr) bool {
		n, _, err := unix.Recvfrom(int(fd), b[:], unix.MSG_PEEK|unix.MSG_DONTWAIT)
		switch {
		case errors.Is(err, unix.EAGAIN):
			return false // wait for the poller
		case err == nil && n == 0, err != nil && !errors.Is(err, unix.EINTR):
			gone = true
		}
		return true
	})
	if err != nil && !errors.Is(err, syscall.EAGAIN) && !isTimeout(err) {
		gone = true
	}
	if gone {
		w.mu.Lock()
		w.gone = true
		close(w.done)
		w.mu.Unlock()
	}
}

// stop ends the watch, if one runs, before the request's own I/O on the
// connection: the watch's wait is cut short and its descriptor closed.
func (w *clientWatch) stop() {
	w.mu.Lock()
	watching := w.watching && !w.stopped
	w.stopped = true
	if w.pending {
		w.timer.Stop() // begin, should it run anyway, sees stopped
		w.pending = false
	}
	f := w.file
	w.file = nil
	w.mu.Unlock()
	if !watching {
		return
	}
	f.SetReadDeadline(aLongTimeAgo)
	<-w.exited
	f.Close()
}

func isTimeout(err error) bool {
	var t interface{ Timeout() bool }
	return errors.As(err, &t) && t.Timeout()
}

// aLongTimeAgo is a deadline in the past, which ends a wait at once.
var aLongTimeAgo = time.Unix(1, 0)
