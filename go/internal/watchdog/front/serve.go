package front

// A connection's loop: heads read, requests answered, most of them inside
// one held wait of the poller on the socket (issue 29).

import (
	"net/http"
	"time"

	"github.com/afterburn-dev/afterburn/go/internal/watchdog/rawio"
)

// serve reads and answers requests until the connection closes or is
// handed to net/http.
//
// Requests whose head and body come whole in the buffer are answered
// inside one wait of the poller on the socket (guard.Conn.Hold, issue 29):
// after a response, the wait for the next request begins without a read
// that finds the socket empty. A request whose body is still on its way,
// a head for net/http, a linger and the errors of a wait are dealt with
// outside it, with the socket read as usual.
func (c *conn) serve() {
	handed := false
	defer func() {
		c.releaseWriter()
		readBufs.Put(c.buf) // handOver copied what net/http still reads
		c.buf = nil
		if !handed {
			c.gc.Close()
		}
		c.srv.track(c, false)
	}()
	c.wait = c.srv.ReadTimeout // the first request's, as net/http's
	c.first = true
	holdable := c.gc.CanHold()
	if c.heldFn == nil {
		c.heldFn = c.heldSteps
	}
	for {
		next := stepRead
		if holdable && c.gc.Hold(c.heldFn) == nil {
			next = c.heldOut
		}
		if next == stepRead {
			next = c.step(false)
		}
		switch next {
		case stepHandOver:
			handed = true
			c.handOver()
			return
		case stepExchange:
			next = c.exchange(false)
		case stepLinger:
			c.linger()
			return
		}
		if next == stepEnd {
			return
		}
	}
}

// stepResult is what became of a step: one request read and answered, or
// why not.
type stepResult uint8

const (
	stepNext     stepResult = iota // answered; the connection goes on
	stepRead                       // read the socket as usual (a hold's wait failed)
	stepWait                       // held: nothing to read without waiting
	stepEnd                        // the connection ends
	stepHandOver                   // the head goes to net/http
	stepExchange                   // held: c.req is parsed, its body is not all here
	stepLinger                     // the connection ends with a linger
)

// heldSteps is Hold's fn: requests are answered while they come whole,
// then it waits (false) or leaves the hold with why (heldOut).
func (c *conn) heldSteps() bool {
	for {
		r := c.step(true)
		switch r {
		case stepNext:
			continue
		case stepWait:
			return false
		}
		c.heldOut = r
		return true
	}
}

// step reads a head (held: without waiting) and answers its request.
func (c *conn) step(held bool) stepResult {
	n, r := c.readHead()
	if r != stepNext {
		return r
	}
	c.wait, c.first = c.srv.IdleTimeout, false
	req := &c.req
	clear(req.Header)
	if !parseHead(c.buf[c.r:c.r+n], req, c.srv.Guard.Target, &c.heads) || req.ContentLength > c.srv.BodyMax {
		return stepHandOver
	}
	c.r += n
	c.afterPOST = req.Method == http.MethodPost
	if held && req.ContentLength > int64(c.w-c.r) {
		return stepExchange // its body is read from the socket, outside the hold
	}
	return c.exchange(held)
}

// readHead waits, idle, for a whole head in the buffer and returns its
// length (with stepNext). It returns stepEnd when the connection ends
// first, and held, stepWait where it would wait. A head that does not fit
// the buffer is handed to net/http by the caller (stepNext, n the buffered
// bytes' count, which parseHead then refuses).
func (c *conn) readHead() (int, stepResult) {
	if !c.waiting {
		// net/http's tolerance for old clients (RFC 9112 §2.2): after a
		// POST it drops the CRs and LFs among the next 4 bytes. A connection
		// handed over is new to net/http, so the front drops them itself.
		// peeked: 4 bytes of the next request came (net/http's Peek(4)
		// returned), whatever the skip then dropped. Both, and the wait's
		// deadline, last until the head is whole, over a hold's wake-ups.
		if c.r == c.w {
			c.r, c.w = 0, 0
		}
		c.skip, c.peeked = c.afterPOST, c.w-c.r >= 4
		if n := c.wholeHead(); n >= 0 {
			return n, stepNext // pipelined
		}
		c.waiting = true
		// The deadline before the idle mark: a Shutdown that finds the
		// connection idle then puts its own deadline after this one.
		if c.wait > 0 {
			c.gc.SetReadDeadlineAhead(rawio.Coarse(time.Now().Add(c.wait), c.wait))
		} else {
			c.gc.SetReadDeadline(time.Time{})
		}
		if !c.setIdle(c.r == c.w) {
			c.waiting = false
			return 0, stepEnd // shutting down
		}
	}
	for {
		if c.w == len(c.buf) {
			if c.r == 0 {
				c.setIdle(false)
				c.waiting = false
				return c.w, stepNext // too long for the front: net/http reads it
			}
			c.w = copy(c.buf[:], c.buf[c.r:c.w])
			c.r = 0
		}
		k, err := c.gc.Read(c.buf[c.w:])
		c.w += k
		if k > 0 {
			c.setIdle(false)
			c.peeked = c.peeked || c.w-c.r >= 4
			if n := c.wholeHead(); n >= 0 {
				c.waiting = false
				return n, stepNext
			}
		}
		if err == rawio.ErrWouldWait {
			return 0, stepWait // held: the wait goes on in the poller
		}
		if err != nil {
			// The client closed or stalled: between requests net/http
			// closes without a word; a head the guard held past
			// read_timeout already came back as its 408 rejection. Bytes
			// read before the error (empty lines the guard let through)
			// are net/http's to answer, as it would have.
			// Between keep-alive requests net/http first waits for 4
			// bytes (bufio.Reader.Peek) and closes quietly when the
			// connection ends before them.
			c.setIdle(false)
			c.waiting = false
			if c.peeked || c.first {
				c.skipCRLF(true)
				if c.w > c.r {
					return c.w - c.r, stepNext
				}
			}
			return 0, stepEnd
		}
	}
}

// wholeHead returns the length of the whole head at the buffer's start,
// after skipCRLF, or -1 while it is not all there (or the skip still waits
// for its 4 bytes).
func (c *conn) wholeHead() int {
	c.skipCRLF(false)
	if c.skip {
		return -1
	}
	return headEnd(c.buf[c.r:c.w])
}

// skipCRLF drops the CRs and LFs among the first 4 bytes of a head after a
// POST, once 4 bytes came or (final) no more will.
func (c *conn) skipCRLF(final bool) {
	if !c.skip || c.w-c.r < 4 && !final {
		return
	}
	c.skip = false
	for k := 0; k < 4 && c.r < c.w && (c.buf[c.r] == '\r' || c.buf[c.r] == '\n'); k++ {
		c.r++
	}
}
