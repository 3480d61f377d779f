package pool

import (
	"slices"
	"time"
)

// Stopping the pool (PROTOCOL.md §9.4): no restarts, queued requests
// answered 503, workers given EOF, the grace period bounded by abandon.

func (p *Pool) isClosing() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.closing
}

// closeLocked stops the pool (PROTOCOL.md §9.4): no restarts, every idle
// worker's request pipe closed, busy ones closed as their exchange ends,
// queued requests answered 503, workers not yet initialised killed. p.mu is
// held; a second call does nothing.
func (p *Pool) closeLocked() {
	if p.closing {
		return
	}
	p.closing = true
	close(p.stop)
	if p.spawn != nil {
		p.spawn.Close() // §2.6: the template exits at the end of its control socket
	}
	for _, w := range slices.Clone(p.idle) {
		p.drainWorkerLocked(w) // lanes still busy close as their exchanges end
	}
	p.refuseQueuedLocked()
	for _, s := range p.slots {
		switch {
		case s.w == nil:
		case s.w.state == wsStarting:
			s.w.Kill() // still initialising, it holds no request: nothing to finish
		case s.w.state == wsParked:
			p.drainWorkerLocked(s.w) // §9.7: waiting for a replacement that will not come
		}
	}
}

// Abandon ends shutdown's grace period with requests still held
// (PROTOCOL.md §9.4): those still queued are answered 503, and every worker
// carrying an exchange is killed, so that the exchange ends now, answered
// 503 when no response head was sent yet (exchange.run), else aborted
// (§8.7). Workers without an exchange are left to exit on EOF.
func (p *Pool) Abandon() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closeLocked()
	p.abandoned = true
	for _, s := range p.slots {
		if w := s.w; w != nil && w.busy > 0 {
			p.log.Warnf("w%d pid %d still running after shutdown_timeout: killing it", s.id, w.Pid)
			w.cut = true
			w.Kill()
		}
	}
}

func (p *Pool) IsAbandoned() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.abandoned
}

// Close stops the pool (closeLocked) and waits for its workers to exit;
// those still running at deadline are killed.
func (p *Pool) Close(deadline time.Time) {
	p.mu.Lock()
	p.closeLocked()
	p.mu.Unlock()
	done := make(chan struct{})
	go func() {
		p.wg.Wait()
		close(done)
	}()
	t := time.NewTimer(time.Until(deadline))
	defer t.Stop()
	select {
	case <-done:
		if p.iso != nil {
			p.iso.Close()
		}
		return
	case <-t.C:
	}
	p.mu.Lock()
	if p.iso != nil {
		defer p.iso.Close() // after every worker is gone
	}
	for _, s := range p.slots {
		if s.w != nil {
			if !s.w.cut {
				p.log.Warnf("w%d pid %d still running after shutdown_timeout: killing it", s.id, s.w.Pid)
			}
			s.w.Kill()
		}
	}
	p.mu.Unlock()
	<-done
}
