package pool

import (
	"errors"
	"io"
	"os"
	"time"

	"github.com/afterburn-dev/afterburn/go/internal/watchdog/wire"
	"github.com/afterburn-dev/afterburn/go/internal/watchdog/worker"
)

// StopAfterGrace gives the handler of l's cancelled exchange cancel_grace to
// clean up (PROTOCOL.md §8.6), or less if its worker exits, then ends the
// lane with reason timeout: the worker is killed, or with several lanes the
// lane faulted. The lane stays busy meanwhile: nothing else can use it.
func (p *Pool) StopAfterGrace(l *Lease) {
	t := time.NewTimer(p.cfg.CancelGrace)
	defer t.Stop()
	select {
	case <-t.C:
	case <-l.W.Exited:
	}
	p.Release(l, wire.ReasonTimeout)
}

func (p *Pool) StartDrain(l *Lease) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.laneTo(l, evLate)
	p.slotStateLocked(l.W)
}

// Drain reads the late response of the exchange whose token is tok from l,
// within cancel_grace, and drops it; then the lane serves again. No byte of it
// reaches anyone, and a late response is not a protocol error. A response
// that does not end within the grace is a stuck lane with several lanes
// (§2.5) and a timeout with one (§8.6).
func (p *Pool) Drain(l *Lease, tok wire.ExchangeToken, method, id string) {
	l.SetDeadlines(time.Now().Add(p.cfg.CancelGrace), time.Time{})
	reason := dropResponse(l.Lane, tok, method)
	l.SetDeadlines(time.Time{}, time.Time{})
	switch reason {
	case "":
		p.m.LateDiscarded.Inc()
	case wire.ReasonStuck:
		p.log.Warnf("w%d: the late response of request %s did not end within cancel_grace %v%s", l.W.ID, id, p.cfg.CancelGrace, l.Label())
		if l.W.InUse == 1 {
			reason = wire.ReasonTimeout
		}
	case wire.ReasonBadResponse:
		p.m.ProtocolErrors.WithLabelValues("bad_response").Inc()
		p.log.Warnf("w%d: the late response of request %s%s is malformed or not its own (PROTOCOL.md §4.4, §4.6)", l.W.ID, id, l.Label())
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
func dropResponse(l *worker.Lane, tok wire.ExchangeToken, method string) wire.RestartReason {
	h := &l.Head
	if err := h.Read(l.BR); err != nil {
		return dropFailure(err)
	}
	hasBody := h.HasBody(method)
	switch {
	case !tok.Echoes(h.Tokens, h.Token), h.Status < 200, hasBody && !h.Chunked && h.Length < 0:
		return wire.ReasonBadResponse
	}
	if hasBody {
		l.Body.Begin(l.BR, h)
		for {
			_, err := l.Body.Read(l.RespBuffer())
			if err == io.EOF {
				break
			}
			if err != nil {
				return dropFailure(err)
			}
		}
	}
	switch {
	case h.Close:
		return wire.ReasonWorkerClosed
	case l.BR.Buffered() > 0:
		return wire.ReasonUnsolicitedOutput // §9.6
	}
	return ""
}

func dropFailure(err error) wire.RestartReason {
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return wire.ReasonStuck
	}
	return wire.Classify(err).Reason
}
