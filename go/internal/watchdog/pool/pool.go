package pool

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/afterburn-dev/afterburn/go/internal/watchdog/config"
	"github.com/afterburn-dev/afterburn/go/internal/watchdog/obs"
	"github.com/afterburn-dev/afterburn/go/internal/watchdog/spawn"
	"github.com/afterburn-dev/afterburn/go/internal/watchdog/wire"
)

// slot is one place of the pool; a replacement worker reuses its id.
type slot struct {
	id       int
	state    slotState
	failures int     // consecutive initialisation failures
	w        *Member // the current worker, nil in backoff
}

type acquired struct {
	l   *Lease
	err wire.ErrorType
}

// waiter is a request in the FIFO queue of PROTOCOL.md §10.3.
type waiter struct {
	ch chan acquired // buffered: a worker or an error is handed over once
}

// Pool keeps cfg.Workers workers running (PROTOCOL.md §2.1), one supervisor
// goroutine per slot, and hands their lanes to exchanges (lanes.go, §2.5).
// Requests wait in FIFO order; free lanes are handed out from the worker
// with the fewest busy ones, most recently freed first (§2.5, §10.3).
//
// Lock order: mu before a spawner's own lock (spawn.Spawner's Close is called
// under mu); a spawner never takes mu, it reaches the pool only through
// spawn.Env's callbacks, which take it after releasing their own. Where a
// worker or a lane is lives in Member and Lease, under mu, and changes only
// in state.go.
type Pool struct {
	cfg   *config.Config
	log   *obs.Logger
	m     *obs.Metrics
	spawn spawn.Spawner // how workers come to exist (spawn.go); set by start
	// iso is isolation=request's state (isolation.go, §2.7); nil otherwise.
	iso *spawn.Isolation
	// fatal carries an error the watchdog cannot serve on, such as
	// isolation=request with a library that cannot fork (§2.7); Run
	// returns it.
	fatal chan error

	mu      sync.Mutex
	slots   []*slot
	idle    []*Member // workers with a free lane, the one freed last at the end (workerTo)
	waiters []*waiter // FIFO
	held    int       // busy plus queued requests, for max_inflight
	looping int       // slots crash-looping
	closing bool
	// abandoned: shutdown's grace period ended with requests still held
	// (PROTOCOL.md §9.4); the exchanges it cut answer 503.
	abandoned bool
	stop      chan struct{} // closed when closing starts
	watchCh   chan struct{} // closed at the next state change; nil when nobody watches
	// fewerLanes: a library served fewer lanes than asked, and it was logged.
	fewerLanes atomic.Bool
	// autoLanes is L of the first worker that answered lanes=auto's offer,
	// the K offered to the workers started after it; 0 before (§2.5).
	autoLanes atomic.Int32
	wg        sync.WaitGroup
}

func New(cfg *config.Config, log *obs.Logger) *Pool {
	p := &Pool{cfg: cfg, log: log, stop: make(chan struct{}), fatal: make(chan error, 1)}
	for i := 1; i <= cfg.Workers; i++ {
		p.slots = append(p.slots, &slot{id: i})
	}
	return p
}

func (p *Pool) Start() {
	if p.cfg.Isolation == config.IsolationRequest {
		iso, err := spawn.NewIsolation(p.log, p.m)
		if err != nil {
			p.fail(err)
			return
		}
		p.mu.Lock() // snapshot reads it
		p.iso = iso
		p.mu.Unlock()
	}
	sp := spawn.NewSpawner(&spawn.Env{
		Cfg: p.cfg, Log: p.log, M: p.m, Iso: p.iso, Stop: p.stop, WG: &p.wg, Fatal: p.fail,
		AutoLanes: p.autoLaneOffer,
		Changed: func() {
			p.mu.Lock()
			p.changedLocked()
			p.mu.Unlock()
		},
	})
	p.mu.Lock() // snapshot reads it
	p.spawn = sp
	p.mu.Unlock()
	for _, s := range p.slots {
		p.wg.Add(1)
		go p.supervise(s)
	}
}

// onExit is called once w's process was reaped. PROTOCOL.md §9.3: an idle
// worker that exits is replaced and no request is affected; a busy one is
// retired by its exchange, which sees the pipes close.
func (p *Pool) onExit(w *Member) {
	p.mu.Lock()
	defer p.mu.Unlock()
	w.gone = true
	if w.busy > 0 || w.draining > 0 {
		// Its exchanges and drains see the pipes close, and retire it; its
		// free lanes must not take a new one meanwhile (§2.5, §8.4).
		if w.state == wsIdle {
			p.workerTo(w, evWithdraw)
		}
		return
	}
	switch w.state {
	case wsIdle:
		p.retireLocked(w, wire.ReasonExited)
	case wsDraining, wsParked:
		// §2.5: a worker retired make-before-break for a fault on a lane is
		// counted with the fault's reason, also when it exits before its
		// successor is ready: a killed worker whose exit shows later than
		// exitGrace after its pipes ended is such a worker, and its restart is
		// the crash (§8.4), not an exit.
		reason := wire.ReasonExited
		if w.fault != "" {
			reason = w.fault
		}
		p.retireLocked(w, reason)
	}
}

// retireLocked kills w and hands it back to its supervisor with the restart
// reason. p.mu is held.
func (p *Pool) retireLocked(w *Member, reason wire.RestartReason) {
	if w.state == wsRetired {
		return
	}
	p.workerTo(w, evRetire) // §2.5: a worker with lanes may be retired with free ones
	if !w.recycled {        // a recycled worker's slot belongs to its successor
		p.setSlotLocked(p.slots[w.ID-1], slotStarting)
	}
	w.Kill()
	w.retired <- reason
}

func (p *Pool) retire(w *Member, reason wire.RestartReason) {
	p.mu.Lock()
	p.retireLocked(w, reason)
	p.mu.Unlock()
}

// Release returns l after an exchange: to service when reason is empty;
// else the worker goes to its supervisor for replacement, or, when it
// serves several lanes and lives on, only l is closed and the worker is
// replaced make-before-break (lanes.go, §2.5).
func (p *Pool) Release(l *Lease, reason wire.RestartReason) {
	w := l.W
	var rss int64
	if p.cfg.MaxWorkerRSS > 0 && reason == "" {
		rss = w.ResidentBytes() // PROTOCOL.md §9.7: after every exchange, outside p.mu
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.laneTo(l, evEnd)
	if reason != "" {
		p.faultLocked(l, reason)
		return
	}
	w.served++
	if p.iso != nil {
		p.endServedLocked(l) // §2.7: one exchange per worker
		return
	}
	if why := p.recycleDueLocked(w, rss); why != "" {
		p.startRecycleLocked(w, why)
	}
	p.parkLocked(w, rss)
	p.offerLocked(l)
}

// Enter admits a request into the watchdog: PROTOCOL.md §10.3 (429 over
// max_inflight) and §9.2 (503 when every slot is crash-looping).
func (p *Pool) Enter() wire.ErrorType {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case p.looping == len(p.slots), p.closing:
		return wire.ErrUnavailable
	case p.cfg.MaxInflight > 0 && p.held >= p.cfg.MaxInflight:
		return wire.ErrOverloaded
	}
	p.held++
	return ""
}

// fail reports an error the watchdog cannot serve on; Run returns the
// first.
func (p *Pool) fail(err error) {
	select {
	case p.fatal <- err:
	default:
	}
}

// Leave ends what enter began.
func (p *Pool) Leave() {
	p.mu.Lock()
	p.held--
	p.changedLocked() // for waitHeld
	p.mu.Unlock()
}

// WaitHeld waits until no request is held or deadline passes, and reports
// whether none is.
func (p *Pool) WaitHeld(deadline time.Time) bool {
	t := time.NewTimer(time.Until(deadline))
	defer t.Stop()
	for {
		ch := p.Watch()
		if p.Inflight() == 0 {
			return true
		}
		select {
		case <-ch:
		case <-t.C:
			return p.Inflight() == 0
		}
	}
}

// Acquire returns an idle worker, waiting in FIFO order until deadline (zero:
// none), and how long it waited (zero when a worker was idle: no clock is
// read then). It returns errTimeout when the deadline passes in the queue
// (PROTOCOL.md §5.2), errUnavailable when every slot is crash-looping, and
// neither worker nor error when ctx ends (the client went away).
func (p *Pool) Acquire(ctx context.Context, deadline time.Time) (*Lease, wire.ErrorType, time.Duration) {
	var queued time.Time
	waited := func() time.Duration {
		if queued.IsZero() {
			return 0
		}
		return max(time.Since(queued), 1) // non-zero: it did wait
	}
	for {
		p.mu.Lock()
		if l := p.takeLocked(); l != nil {
			p.mu.Unlock()
			if !p.usable(l) {
				continue
			}
			return l, "", waited()
		}
		if p.looping == len(p.slots) || p.closing {
			p.mu.Unlock()
			return nil, wire.ErrUnavailable, waited()
		}
		if queued.IsZero() {
			queued = time.Now()
		}
		wt := &waiter{ch: make(chan acquired, 1)}
		p.waiters = append(p.waiters, wt)
		p.changedLocked()
		p.mu.Unlock()

		a, ok := p.wait(ctx, wt, deadline)
		if !ok {
			if ctx.Err() != nil {
				return nil, "", waited()
			}
			return nil, wire.ErrTimeout, waited()
		}
		if a.l == nil {
			return nil, a.err, waited()
		}
		if !p.usable(a.l) {
			continue
		}
		return a.l, "", waited()
	}
}

// wait blocks on a queued request until it is served, its deadline passes
// or ctx ends.
func (p *Pool) wait(ctx context.Context, wt *waiter, deadline time.Time) (acquired, bool) {
	var timeout <-chan time.Time
	if !deadline.IsZero() {
		t := time.NewTimer(time.Until(deadline))
		defer t.Stop()
		timeout = t.C
	}
	select {
	case a := <-wt.ch:
		return a, true
	case <-timeout:
	case <-ctx.Done():
	}
	p.mu.Lock()
	for i, x := range p.waiters {
		if x == wt {
			p.waiters = append(p.waiters[:i], p.waiters[i+1:]...)
			p.mu.Unlock()
			return acquired{}, false
		}
	}
	p.mu.Unlock()
	// Served in the meantime: give the lane back.
	if a := <-wt.ch; a.l != nil {
		p.Release(a.l, "")
	}
	return acquired{}, false
}

// refuseQueuedLocked answers every queued request unavailable (503): every
// slot crash-loops (§9.2), or the pool closes (§9.4).
func (p *Pool) refuseQueuedLocked() {
	for _, wt := range p.waiters {
		wt.ch <- acquired{err: wire.ErrUnavailable}
	}
	p.waiters = nil
}

// usable applies the pre-dispatch check of PROTOCOL.md §9.6 to a lane just
// taken out of the pool, and releases it with the fault when it fails.
func (p *Pool) usable(l *Lease) bool {
	if reason := p.IdleCheck(l); reason != "" {
		p.Release(l, reason)
		return false
	}
	return true
}

// IdleCheck applies lane.idleCheck and counts unsolicited output.
func (p *Pool) IdleCheck(l *Lease) wire.RestartReason {
	reason := l.IdleCheck()
	if reason == wire.ReasonUnsolicitedOutput {
		p.m.ProtocolErrors.WithLabelValues(string(reason)).Inc()
		p.log.Warnf("w%d wrote to its response pipe between exchanges%s", l.W.ID, l.Label())
	}
	return reason
}
