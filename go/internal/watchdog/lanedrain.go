package watchdog

import (
	"errors"
	"io"
	"net/http"
	"os"
	"time"
)

// An exchange past its deadline (PROTOCOL.md §8.6, §2.5). The client is
// answered 504 at once (or its response aborted, §8.7); the worker is not
// killed at once: the library cancels the handler itself 50 ms after the
// deadline (§5.2), and, with several lanes, is also asked to over the cancel
// pipe. When the late response can be read afresh, its lane drains: the
// response is read to its end within cancel_grace and dropped, then the lane
// is free again and the worker lives on. When it cannot, the worker gets
// cancel_grace to clean up, then it is killed (one lane) or the lane is
// faulted (several, lanes.go): its worker is replaced make-before-break. A
// worker with one lane is a worker with L = 1: the same path serves both.

// cancelExchange ends x, whose deadline passed. requestWritten says the
// whole request reached the pipe. The result is run's.
func (x *exchange) cancelExchange(requestWritten bool) bool {
	w, l, p := x.w, x.l, x.wd.pool
	if x.token.set() && w.inUse > 1 {
		if err := w.cancel(x.token); err != nil {
			p.log.warnf("w%d: cannot write the cancellation of request %s: %v", w.id, x.id, err)
		} else {
			p.m.laneCancels.Inc()
		}
	}
	// Only a response not begun can be read afresh: the head reader and the
	// chunk reader do not resume in the middle of what they read. Without
	// tokens (§4.6) a late response could not be told from a stale one.
	switch {
	case requestWritten && !x.respBegun && x.token.set():
		p.log.warnf("w%d passed the deadline of request %s%s: cancelled; its late response will be dropped", w.id, x.id, l.label())
		p.startDrain(l)
		go p.drain(l, x.token, x.r.Method, x.id)
	case !x.token.set():
		p.log.warnf("w%d passed the deadline of request %s%s: its library does not list exchange (PROTOCOL.md §4.6), so a late response could not be told from a stale one; stopped after cancel_grace %v", w.id, x.id, l.label(), p.cfg.CancelGrace)
		go p.stopAfterGrace(l)
	default:
		p.log.warnf("w%d passed the deadline of request %s%s with its request or response under way; stopped after cancel_grace %v", w.id, x.id, l.label(), p.cfg.CancelGrace)
		go p.stopAfterGrace(l)
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

// stopAfterGrace gives the handler of l's cancelled exchange cancel_grace to
// clean up (PROTOCOL.md §8.6), or less if its worker exits, then ends the
// lane with reason timeout: the worker is killed, or with several lanes the
// lane faulted. The lane stays busy meanwhile: nothing else can use it.
func (p *pool) stopAfterGrace(l *lane) {
	t := time.NewTimer(p.cfg.CancelGrace)
	defer t.Stop()
	select {
	case <-t.C:
	case <-l.w.exited:
	}
	p.release(l, "timeout")
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
// within cancel_grace, and drops it; then the lane serves again. No byte of it
// reaches anyone, and a late response is not a protocol error. A response
// that does not end within the grace is a stuck lane with several lanes
// (§2.5) and a timeout with one (§8.6).
func (p *pool) drain(l *lane, tok exchangeToken, method, id string) {
	l.respR.SetReadDeadline(time.Now().Add(p.cfg.CancelGrace))
	l.reqW.SetWriteDeadline(time.Time{})
	reason := dropResponse(l, tok, method)
	l.respR.SetReadDeadline(time.Time{})
	switch reason {
	case "":
		p.m.lateDiscarded.Inc()
	case "stuck":
		p.log.warnf("w%d: the late response of request %s did not end within cancel_grace %v%s", l.w.id, id, p.cfg.CancelGrace, l.label())
		if l.w.inUse == 1 {
			reason = "timeout"
		}
	case "bad_response":
		p.m.protocolErrors.WithLabelValues("bad_response").Inc()
		p.log.warnf("w%d: the late response of request %s%s is malformed or not its own (PROTOCOL.md §4.4, §4.6)", l.w.id, id, l.label())
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
