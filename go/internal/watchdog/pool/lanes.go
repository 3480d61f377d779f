package pool

import (
	"github.com/afterburn-dev/afterburn/go/internal/watchdog/config"
	"github.com/afterburn-dev/afterburn/go/internal/watchdog/wire"
)

// The pool's side of lanes (PROTOCOL.md §2.5): what it hands to an exchange
// is a lane, taken from the worker with the fewest busy lanes and given back
// when the exchange ends. A worker with one lane is the pool of §2.1: taking
// its lane takes the worker, and the most recently freed one goes first
// (§10.3). Every function here runs with p.mu held.

// takeLocked takes a free lane for an exchange, or returns nil when none is
// free. PROTOCOL.md §2.5: the worker with the fewest busy lanes, so that
// every worker's CPU is used before any runs two exchanges at once; among
// those the one freed last (§10.3: below full load the same few workers
// serve, their caches and JIT warm, while the rest sleep; taking the oldest
// would wake each in turn, and at one request at a time over two workers on
// one CPU that made the p99 several times worse).
func (p *Pool) takeLocked() *Lease {
	n := len(p.idle)
	if n == 0 {
		return nil
	}
	best := n - 1
	for i := n - 2; i >= 0 && p.idle[best].busy > 0; i-- {
		if p.idle[i].busy < p.idle[best].busy {
			best = i
		}
	}
	w := p.idle[best]
	var l *Lease
	free := 0
	for _, x := range w.serving() {
		if x.state == laneFree {
			if l == nil {
				l = x
			}
			free++
		}
	}
	if l == nil {
		// Not reached: a worker is in the idle list only with a free lane
		// (offerLocked). Should that ever break, it leaves the list rather
		// than take the watchdog down.
		p.log.Warnf("w%d was offered with no free lane; taking it out of the idle list", w.ID)
		p.workerTo(w, evWithdraw)
		return p.takeLocked()
	}
	p.laneTo(l, evTake)
	if free == 1 {
		p.workerTo(w, evWithdraw)
	}
	p.slotStateLocked(w)
	return l
}

// offerLocked puts l, whose exchange ended, back in service: to the first
// queued request, else among the free lanes, its worker moved to the end of
// the idle list (freed last, taken first). A lane of a worker on its way out
// is closed instead: the library ends it at EOF (§9.4, §9.7).
func (p *Pool) offerLocked(l *Lease) {
	w := l.W
	switch {
	case w.gone:
		p.laneTo(l, evClose)
		if w.busy == 0 && w.draining == 0 {
			p.retireLocked(w, wire.ReasonExited)
		}
		return
	case w.state == wsRetired || w.state == wsStarting:
		// Its supervisor has it, or it has not answered its handshake: the
		// lane stays free and is never taken.
		p.slotStateLocked(w)
		return
	case w.recycled || p.closing || w.state == wsDraining:
		p.laneTo(l, evClose)
		l.CloseRequest()
		p.workerTo(w, evDrain)
		p.slotStateLocked(w)
		p.finishRetiringLocked(w)
		return
	case w.state == wsParked:
		// §9.7, §2.5: the lane stays free; no new exchange until its
		// successor is ready.
		p.slotStateLocked(w)
		return
	case len(p.waiters) > 0:
		wt := p.waiters[0]
		p.waiters[0] = nil
		p.waiters = p.waiters[1:]
		p.laneTo(l, evTake)
		p.slotStateLocked(w)
		wt.ch <- acquired{l: l}
		return
	}
	p.workerTo(w, evOffer)
	p.slotStateLocked(w)
}

// offerAllLocked offers every free lane of w, a worker that has just
// answered its handshake or may serve again.
func (p *Pool) offerAllLocked(w *Member) {
	for _, l := range w.serving() {
		if l.state == laneFree {
			p.offerLocked(l)
		}
	}
}

// faultLocked ends l's exchange with a failure (§8.4–§8.6, §9.6). With one
// lane, or when the worker is gone, the worker is retired and replaced as
// ever. A worker with several lanes that lives on keeps its other exchanges:
// l is closed, the worker takes no new exchange, its successor starts at
// once, and the worker is killed once its other exchanges have ended
// (PROTOCOL.md §2.5, make-before-break).
func (p *Pool) faultLocked(l *Lease, reason wire.RestartReason) {
	w := l.W
	// Exited but not yet reaped counts as gone: onExit may run a moment after
	// the exchange saw the pipes end (worker.awaitExit), and the restart is the crash.
	if w.InUse == 1 || w.gone || w.HasExited() {
		p.retireLocked(w, reason)
		return
	}
	p.laneTo(l, evClose)
	l.CloseRequest()
	if w.fault == wire.ReasonExited && reason != wire.ReasonExited && w.state != wsRetired {
		// A free lane's hang-up (idleCheck) says only that the worker is
		// ending; an exchange failing on another lane at its end says it
		// died busy: the restart is that failure (§8.4), also when the
		// worker exits before its successor is ready (onExit).
		w.fault = reason
	}
	if w.fault == "" && w.state != wsRetired {
		w.fault = reason
		p.log.Warnf("w%d pid %d: %s on lane %d: it takes no new request and is replaced once its other exchanges end", w.ID, w.Pid, reason, l.N)
		if !w.recycled {
			if w.state != wsDraining {
				p.workerTo(w, evPark)
			}
			if !w.recycling {
				askReplacementLocked(w)
			}
		}
	}
	p.slotStateLocked(w)
	p.finishRetiringLocked(w)
}

// finishRetiringLocked kills a faulted worker whose successor serves once
// no exchange of a client is left on it: a stuck lane would keep it from
// ever exiting on EOF (§2.5).
func (p *Pool) finishRetiringLocked(w *Member) {
	if w.fault != "" && w.recycled && w.busy == 0 {
		w.Kill()
	}
}

// drainWorkerLocked takes w out of service for good (shutdown §9.4,
// recycling §9.7): its free lanes are closed now, its busy ones as their
// exchanges end (offerLocked).
func (p *Pool) drainWorkerLocked(w *Member) {
	p.workerTo(w, evDrain)
	for _, l := range w.serving() {
		if l.state == laneFree {
			p.laneTo(l, evClose)
			l.CloseRequest()
		}
	}
	p.slotStateLocked(w)
	p.finishRetiringLocked(w)
}

// slotStateLocked shows w's slot busy while any lane of w is (§9.2). The
// slot of a worker already replaced belongs to its successor.
func (p *Pool) slotStateLocked(w *Member) {
	p.changedLocked() // lanes change state without their slot (watch)
	if w.recycled || w.state == wsRetired || w.state == wsStarting {
		return
	}
	st := slotIdle
	switch {
	case w.busy > 0, w.draining > 0:
		// §9.2: busy while any lane is; a draining lane still holds its
		// exchange's late response (§8.6), and a worker of one lane whose
		// lane drains takes no request.
		st = slotBusy
	case w.state == wsParked:
		// §9.2: a worker waiting for its successor (§2.5 make-before-break,
		// §9.7) takes no new request, so it is not idle: its slot's next
		// worker is starting.
		st = slotStarting
	}
	p.setSlotLocked(p.slots[w.ID-1], st)
}

// LaneCounts are the lanes of live workers by state, for /_/ready (§9.2)
// and the afterburn_lanes gauge (§10.4).
type LaneCounts struct {
	Free     int `json:"free"`
	Busy     int `json:"busy"`
	Draining int `json:"draining"`
}

func (p *Pool) laneCountsLocked() LaneCounts {
	var c LaneCounts
	for _, s := range p.slots {
		w := s.w
		if w == nil || w.state == wsStarting || w.state == wsRetired {
			continue
		}
		for _, l := range w.serving() {
			switch l.state {
			case laneFree:
				c.Free++
			case laneBusy:
				c.Busy++
			case laneDraining:
				c.Draining++
			}
		}
	}
	return c
}

func (p *Pool) LaneCounts() LaneCounts {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.laneCountsLocked()
}

// settleLanes closes the lanes a worker's library does not serve, once its
// handshake has said how many it does, and says once that a library serves
// fewer lanes than lanes asks for (§2.5).
func (p *Pool) settleLanes(w *Member) {
	if len(w.lanes) == 1 {
		return
	}
	w.Worker.SettleLanes()
	p.mu.Lock()
	for _, l := range w.lanes[w.InUse:] {
		p.laneTo(l, evClose)
	}
	p.mu.Unlock()
	if w.Offered {
		// lanes=auto (§2.5): the library's answer is the offer from now on,
		// so that later workers get no descriptor they would not serve
		// (one lane: no lane variables at all, as with lanes=1).
		if p.autoLanes.CompareAndSwap(0, int32(w.InUse)) {
			p.log.Printf("lanes=auto: the library serves %d lane(s) per worker (PROTOCOL.md §2.5: AfterBurn-Streams-Preferred); workers started from now on are offered that many", w.InUse)
		}
		return
	}
	if w.InUse < len(w.lanes) && p.fewerLanes.CompareAndSwap(false, true) {
		p.log.Warnf("w%d: the library serves %d lane(s) where lanes=%d asks for %d (PROTOCOL.md §2.5: it states its most in AfterBurn-Streams, and needs the streams and exchange capabilities); the rest are closed", w.ID, w.InUse, len(w.lanes), len(w.lanes))
	}
}

// autoLaneOffer is the K a worker is offered under lanes=auto (§2.5): the
// lanes the first worker to answer an offer serves, config.AutoLanes before.
func (p *Pool) autoLaneOffer() int {
	if n := p.autoLanes.Load(); n > 0 {
		return int(n)
	}
	return config.AutoLanes
}

func (c LaneCounts) Get(state string) int {
	switch state {
	case "free":
		return c.Free
	case "busy":
		return c.Busy
	}
	return c.Draining
}
