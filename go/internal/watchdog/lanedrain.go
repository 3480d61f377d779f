package watchdog

import (
	"errors"
	"io"
	"net/http"
	"os"
	"time"
)

// A lane past its deadline (PROTOCOL.md §2.5, §8.6). With one lane the
// worker is killed, as ever. A worker with several lanes lives on: the
// client is answered 504 (or its response aborted, §8.7), the library is
// asked to stop the handler over the cancel pipe, and the lane drains: its
// late response is read to its end and dropped, then the lane is free
// again. A lane that cannot be brought back in step is faulted instead
// (lanes.go): its worker is replaced make-before-break.

// cancelLane ends x, whose deadline passed on a worker with several lanes.
// requestWritten says the whole request reached the pipe. The result is
// run's.
func (x *exchange) cancelLane(requestWritten bool) bool {
	w, l, p := x.w, x.l, x.wd.pool
	if x.token.set() {
		if err := w.cancel(x.token); err != nil {
			p.log.printf("w%d: cannot write the cancellation of request %s: %v", w.id, x.id, err)
		} else {
			p.m.laneCancels.Inc()
		}
	}
	// Only a response not begun can be read afresh: the head reader and the
	// chunk reader do not resume in the middle of what they read.
	if requestWritten && !x.respBegun && x.token.set() {
		p.log.printf("w%d passed the deadline of request %s on lane %d: cancelled; its late response will be dropped", w.id, x.id, l.n)
		p.startDrain(l)
		go p.drain(l, x.token, x.r.Method, x.id)
	} else {
		p.log.printf("w%d passed the deadline of request %s on lane %d with its request or response under way: the lane cannot be drained", w.id, x.id, l.n)
		p.release(l, "timeout")
	}
	if !x.headSent {
		x.wd.fail(x.rw, errTimeout, x.entry)
		return false
	}
	if x.respDone {
		return false
	}
	panic(http.ErrAbortHandler) // §8.7
}

func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

func (p *pool) startDrain(l *lane) {
	p.mu.Lock()
	defer p.mu.Unlock()
	l.state = laneDraining
	l.w.busy--
	l.w.draining++
	p.slotStateLocked(l.w)
}

// drain reads the late response of the exchange whose token is tok from l,
// within lane_grace, and drops it; then the lane serves again. No byte of it
// reaches anyone, and a late response is not a protocol error.
func (p *pool) drain(l *lane, tok exchangeToken, method, id string) {
	l.respR.SetReadDeadline(time.Now().Add(p.cfg.LaneGrace))
	l.reqW.SetWriteDeadline(time.Time{})
	reason := dropResponse(l, tok, method)
	l.respR.SetReadDeadline(time.Time{})
	switch reason {
	case "":
		p.m.lateDiscarded.Inc()
	case "stuck":
		p.log.printf("w%d: the late response of request %s did not end within lane_grace %v on lane %d", l.w.id, id, p.cfg.LaneGrace, l.n)
	case "bad_response":
		p.m.protocolErrors.WithLabelValues("bad_response").Inc()
		p.log.printf("w%d: the late response of request %s on lane %d is malformed or not its own (PROTOCOL.md §4.4, §4.6)", l.w.id, id, l.n)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	l.w.draining--
	if reason != "" {
		p.faultLocked(l, reason)
		return
	}
	p.offerLocked(l)
}

// dropResponse reads one response from l and discards it: "" when it was
// the exchange's (token tok), well framed and kept the lane alive, else the
// restart reason.
func dropResponse(l *lane, tok exchangeToken, method string) string {
	h := &l.head
	if err := h.read(l.br); err != nil {
		return dropFailure(err)
	}
	hasBody := h.hasBody(method)
	switch {
	case !tok.echoes(h.tokens, h.token), h.status < 200, hasBody && !h.chunked && h.length < 0:
		return "bad_response"
	}
	if hasBody {
		l.body.begin(l.br, h)
		for {
			_, err := l.body.Read(l.respBuffer())
			if err == io.EOF {
				break
			}
			if err != nil {
				return dropFailure(err)
			}
		}
	}
	switch {
	case h.close:
		return "worker_closed"
	case l.br.Buffered() > 0:
		return "unsolicited_output" // §9.6
	}
	return ""
}

func dropFailure(err error) string {
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return "stuck"
	}
	return classify(err).reason
}
