package watchdog

import (
	"errors"
	"io"
	"os"
	"time"
)

// stopAfterGrace gives the handler of l's cancelled exchange cancel_grace to
// clean up (PROTOCOL.md §8.6), or less if its worker exits, then ends the
// lane with reason timeout: the worker is killed, or with several lanes the
// lane faulted. The lane stays busy meanwhile: nothing else can use it.
func (p *pool) stopAfterGrace(l *lease) {
	t := time.NewTimer(p.cfg.CancelGrace)
	defer t.Stop()
	select {
	case <-t.C:
	case <-l.w.exited:
	}
	p.release(l, reasonTimeout)
}

func (p *pool) startDrain(l *lease) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.laneTo(l, evLate)
	p.slotStateLocked(l.w)
}

// drain reads the late response of the exchange whose token is tok from l,
// within cancel_grace, and drops it; then the lane serves again. No byte of it
// reaches anyone, and a late response is not a protocol error. A response
// that does not end within the grace is a stuck lane with several lanes
// (§2.5) and a timeout with one (§8.6).
func (p *pool) drain(l *lease, tok exchangeToken, method, id string) {
	l.respR.SetReadDeadline(time.Now().Add(p.cfg.CancelGrace))
	l.reqW.SetWriteDeadline(time.Time{})
	reason := dropResponse(l.lane, tok, method)
	l.respR.SetReadDeadline(time.Time{})
	switch reason {
	case "":
		p.m.lateDiscarded.Inc()
	case reasonStuck:
		p.log.warnf("w%d: the late response of request %s did not end within cancel_grace %v%s", l.w.id, id, p.cfg.CancelGrace, l.label())
		if l.w.inUse == 1 {
			reason = reasonTimeout
		}
	case reasonBadResponse:
		p.m.protocolErrors.WithLabelValues("bad_response").Inc()
		p.log.warnf("w%d: the late response of request %s%s is malformed or not its own (PROTOCOL.md §4.4, §4.6)", l.w.id, id, l.label())
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.laneTo(l, evEnd)
	if reason != "" {
		p.faultLocked(l, reason)
		return
	}
	p.offerLocked(l)
}

// dropResponse reads one response from l and discards it: "" when it was
// the exchange's (token tok), well framed and kept the lane alive, else the
// restart reason.
func dropResponse(l *lane, tok exchangeToken, method string) restartReason {
	h := &l.head
	if err := h.read(l.br); err != nil {
		return dropFailure(err)
	}
	hasBody := h.hasBody(method)
	switch {
	case !tok.echoes(h.tokens, h.token), h.status < 200, hasBody && !h.chunked && h.length < 0:
		return reasonBadResponse
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
		return reasonWorkerClosed
	case l.br.Buffered() > 0:
		return reasonUnsolicitedOutput // §9.6
	}
	return ""
}

func dropFailure(err error) restartReason {
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return reasonStuck
	}
	return classify(err).reason
}
