package pool

import (
	"errors"
	"fmt"
	"time"

	"github.com/afterburn-dev/afterburn/go/internal/watchdog/spawn"
	"github.com/afterburn-dev/afterburn/go/internal/watchdog/wire"
	"github.com/afterburn-dev/afterburn/go/internal/watchdog/worker"
)

// supervise runs the workers of one slot, one after another, until the pool
// closes. PROTOCOL.md §9.1: only initialisation failures back off; a worker
// that dies after its handshake is replaced at once.
func (p *Pool) supervise(s *slot) {
	defer p.wg.Done()
	var next *Member // a successor already started by recycling (§9.7)
	for {
		w := next
		next = nil
		if w == nil {
			p.mu.Lock()
			if p.closing {
				p.setSlotLocked(s, slotStopped)
				p.mu.Unlock()
				return
			}
			p.setSlotLocked(s, slotStarting)
			p.mu.Unlock()

			var reason wire.RestartReason
			var err error
			w, reason, err = p.startOne(s)
			if err != nil {
				if p.isClosing() {
					return
				}
				p.m.Restarted(reason)
				if !p.sleep(p.initFailed(s, reason, err)) {
					return
				}
				continue
			}
			p.initSucceeded(s, w)
		}
		reason, successor := p.serve(s, w)
		if successor != nil {
			next = successor
			continue
		}
		if reason == wire.ReasonServed {
			// §2.7: the slot's next spare starts now, while w exits.
			p.wg.Add(1)
			go p.finishServed(w)
			continue
		}
		<-w.Exited
		w.ClosePipes()
		p.mu.Lock()
		s.w = nil
		closing := p.closing
		p.mu.Unlock()
		if closing {
			p.waitLogs(w)
			p.log.Printf("w%d pid %d stopped: %s", s.id, w.Pid, w.ExitStatus())
			return
		}
		p.m.Restarted(reason)
		p.logReplaced(w, reason)
	}
}

// logReplaced says that w, gone, was replaced for reason, with how it ended:
// by its supervisor or, make-before-break, once its successor serves.
func (p *Pool) logReplaced(w *Member, reason wire.RestartReason) {
	p.log.Warnf("w%d pid %d replaced: %s (%s)", w.ID, w.Pid, reason, w.ExitStatus())
}

// startOne starts a worker the spawner's way and waits for its handshake
// (PROTOCOL.md §3), bounded by init_timeout (§3.5), or fork_timeout from the
// fork request for a forked worker (§2.6).
func (p *Pool) startOne(s *slot) (*Member, wire.RestartReason, error) {
	pw, err := p.spawn.Start(s.id)
	if err != nil {
		reason := wire.ReasonInitFailed
		var ie *worker.InitError
		if errors.As(err, &ie) {
			reason = ie.Reason
		}
		return nil, reason, err
	}
	w := newMember(pw) // starting
	p.mu.Lock()
	s.w = w
	p.mu.Unlock()
	go func() {
		<-w.Exited
		p.onExit(w)
	}()
	if !p.cfg.Handshake {
		return w, "", nil // PROTOCOL.md §11.2: ready once started
	}
	ie := w.Handshake(w.Deadline, p.cfg.Stdio, p.log)
	if ie == nil {
		p.settleLanes(w)
		p.spawn.Handshook(w.Worker, nil)
		return w, "", nil
	}
	p.spawn.Handshook(w.Worker, ie)
	if ie.Violation {
		p.m.ProtocolErrors.WithLabelValues("handshake").Inc()
	}
	w.Kill()
	<-w.Exited
	w.ClosePipes()
	p.waitLogs(w) // the worker's last words explain the failure: log them first
	p.mu.Lock()
	s.w = nil
	p.mu.Unlock()
	return nil, ie.Reason, fmt.Errorf("%v (%s)", ie, w.ExitStatus())
}

func (p *Pool) waitLogs(w *Member) { worker.WaitLogs(w.Worker) }

// initFailed records an initialisation failure of slot s and returns the
// backoff before the next start (PROTOCOL.md §9.1).
func (p *Pool) initFailed(s *slot, reason wire.RestartReason, err error) time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	s.failures++
	p.setSlotLocked(s, slotBackoff)
	d := spawn.BackoffAfter(s.failures)
	p.log.Warnf("w%d %s: %v; restarting in %v", s.id, reason, err, d)
	if s.failures == spawn.CrashLoopAfter {
		p.looping++
		p.changedLocked()
		p.log.Errorf("w%d is crash-looping: %d consecutive initialisation failures", s.id, s.failures)
	}
	if p.looping == len(p.slots) {
		p.refuseQueuedLocked() // PROTOCOL.md §9.2: 503 at once instead of queueing
	}
	return d
}

func (p *Pool) initSucceeded(s *slot, w *Member) {
	p.m.InitDuration.Observe(time.Since(w.Started).Seconds())
	p.mu.Lock()
	defer p.mu.Unlock()
	p.planRecycle(w)
	if s.failures >= spawn.CrashLoopAfter {
		p.looping--
		p.changedLocked()
		p.log.Printf("w%d recovered after %d initialisation failures", s.id, s.failures)
	}
	s.failures = 0 // PROTOCOL.md §9.1: a handshake resets the backoff
	p.workerTo(w, evHandshook)
	p.offerAllLocked(w)
}

// sleep waits d unless the pool closes first.
func (p *Pool) sleep(d time.Duration) bool { return spawn.SleepUnless(d, p.stop) }

// serve waits until w is retired, repeating the handshake on it while idle
// when healthcheck_interval is set (PROTOCOL.md §3.5). When w is due for
// recycling (§9.7) it starts w's successor and returns it instead.
func (p *Pool) serve(s *slot, w *Member) (reason wire.RestartReason, successor *Member) {
	var tick <-chan time.Time
	if p.cfg.HealthcheckInterval > 0 {
		t := time.NewTicker(p.cfg.HealthcheckInterval)
		defer t.Stop()
		tick = t.C
	}
	var aged <-chan time.Time
	if p.cfg.MaxAge > 0 {
		t := time.NewTimer(withJitter(p.cfg.MaxAge))
		defer t.Stop()
		aged = t.C
	}
	for {
		select {
		case reason := <-w.retired:
			return reason, nil
		case <-tick:
			p.healthcheck(w)
		case <-aged:
			p.mu.Lock()
			if w.state != wsRetired && !w.recycling {
				p.startRecycleLocked(w, fmt.Sprintf("older than max_age %v", p.cfg.MaxAge))
			}
			p.mu.Unlock()
		case <-w.recycle:
			if p.isClosing() {
				continue
			}
			if nw := p.replace(s, w); nw != nil {
				return "", nw
			}
		}
	}
}

// healthcheck repeats the handshake on w if it is idle; a worker that does
// not answer within init_timeout is replaced (reason unresponsive, §3.5).
func (p *Pool) healthcheck(w *Member) {
	p.mu.Lock()
	l := w.First() // §2.5: handshakes run on lane 1, on a worker with no exchange
	if w.state != wsIdle || w.busy > 0 || w.draining > 0 || l.state != laneFree {
		p.mu.Unlock()
		return
	}
	p.workerTo(w, evWithdraw)
	p.laneTo(l, evTake)
	p.slotStateLocked(w)
	p.mu.Unlock()
	if !p.usable(l) {
		return
	}
	if err := w.Handshake(time.Now().Add(p.cfg.InitTimeout), false, p.log); err != nil {
		p.log.Warnf("w%d failed its liveness handshake: %v", w.ID, err)
		p.retire(w, wire.ReasonUnresponsive)
		return
	}
	p.Release(l, "")
}
