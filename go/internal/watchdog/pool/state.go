package pool

import (
	"fmt"
	"time"

	"github.com/afterburn-dev/afterburn/go/internal/watchdog/wire"
	"github.com/afterburn-dev/afterburn/go/internal/watchdog/worker"
)

// The life of a worker and of its lanes, as the pool sees them: two tables of
// states × events, and the one function each that moves along them
// (workerTo, laneTo). Nothing else in the watchdog assigns these states, and
// the counts that follow from them (a worker's busy and draining lanes, the
// idle list) change only here; state_test.go walks every pair of both tables.
// A pair the table does not hold is refused: the state stays as it was, and
// the refusal is logged as bad_transition (never silently).
//
// Lock order: the pool's mu before a spawner's own lock (spawn.go); every
// function here runs with pool.mu held.

// workerState is where a worker is in the pool.
type workerState int

const (
	wsStarting workerState = iota // started, handshake not answered yet
	wsIdle                        // has a free lane: in the idle list
	wsBusy                        // out of the idle list: every serving lane taken, or a liveness check
	wsDraining                    // on its way out (§9.4, §9.7): its lanes close as their exchanges end
	wsParked                      // waiting for its successor, takes no request (§2.5 fault, §9.7 RSS)
	wsRetired                     // handed back to its supervisor with a restart reason
	workerStates
)

func (s workerState) String() string {
	return [...]string{"starting", "idle", "busy", "draining", "parked", "retired"}[s]
}

// workerEvent is what happens to a worker.
type workerEvent int

const (
	evHandshook workerEvent = iota // answered its handshake: offered next (offerAll)
	evOffer                        // a lane is free again and offered: into the idle list, last
	evWithdraw                     // out of the idle list: last free lane taken, liveness check, or its exit seen with exchanges on it
	evPark                         // stops taking requests until its successor is ready
	evUnpark                       // its successor failed to start: it serves on
	evDrain                        // taken out of service for good: EOF on its lanes
	evRetire                       // handed to its supervisor to be replaced or to end
	workerEvents
)

func (e workerEvent) String() string {
	return [...]string{"handshook", "offer", "withdraw", "park", "unpark", "drain", "retire"}[e]
}

// workerTable is every legal transition of a worker.
var workerTable = map[workerState]map[workerEvent]workerState{
	wsStarting: {evHandshook: wsBusy, evRetire: wsRetired},
	wsIdle:     {evOffer: wsIdle, evWithdraw: wsBusy, evPark: wsParked, evDrain: wsDraining, evRetire: wsRetired},
	wsBusy:     {evOffer: wsIdle, evPark: wsParked, evDrain: wsDraining, evRetire: wsRetired},
	wsParked:   {evPark: wsParked, evUnpark: wsBusy, evDrain: wsDraining, evRetire: wsRetired},
	wsDraining: {evDrain: wsDraining, evRetire: wsRetired},
	wsRetired:  {},
}

// laneState is where a lane is.
type laneState int

const (
	laneFree     laneState = iota
	laneBusy               // carrying an exchange (or a liveness handshake, lane 1)
	laneDraining           // past its deadline: the late response is read and dropped (§2.5)
	laneClosed             // its request pipe is closed: EOF, surplus, or a fault
	laneStates
)

func (s laneState) String() string {
	return [...]string{"free", "busy", "draining", "closed"}[s]
}

// laneEvent is what happens to a lane.
type laneEvent int

const (
	evTake  laneEvent = iota // an exchange or a liveness check takes it
	evEnd                    // its exchange ended, or its late response was drained
	evLate                   // its exchange passed its deadline: the late response drains (§2.5)
	evClose                  // its request pipe is closed, or it is surplus
	laneEvents
)

func (e laneEvent) String() string {
	return [...]string{"take", "end", "late", "close"}[e]
}

// laneTable is every legal transition of a lane.
var laneTable = map[laneState]map[laneEvent]laneState{
	laneFree:     {evTake: laneBusy, evClose: laneClosed},
	laneBusy:     {evEnd: laneFree, evLate: laneDraining},
	laneDraining: {evEnd: laneFree},
	laneClosed:   {},
}

// The tables above are what a reader and the tests read; workerTo and laneTo,
// on every request's path, look up the same pairs in slices built from them
// (a map lookup per transition costs more than the rest of the transition).
var (
	workerStep = steps[workerState, workerEvent, workerState](workerTable, workerStates, workerEvents)
	laneStep   = steps[laneState, laneEvent, laneState](laneTable, laneStates, laneEvents)
)

// step is one cell of a transition array: the next state plus one, or zero
// where the table refuses the pair.
type step[S ~int] uint8

func (s step[S]) next() (S, bool) { return S(s) - 1, s != 0 }

// steps lays a table out as an array of steps by state and event.
func steps[S, E ~int, N ~int](table map[S]map[E]N, states S, events E) [][]step[N] {
	out := make([][]step[N], states)
	for s := range states {
		out[s] = make([]step[N], events)
		for e, n := range table[s] {
			out[s][e] = step[N](n + 1)
		}
	}
	return out
}

// Member is a worker as the pool keeps it: the process and its pipes
// (worker), and what the pool knows of it. Every field below is guarded by
// pool.mu.
type Member struct {
	*worker.Worker
	lanes []*Lease // one per lane of the worker, in order

	state    workerState // changed by workerTo only
	busy     int         // lanes busy; changed by laneTo only
	draining int         // lanes draining; changed by laneTo only
	// fault is why a worker with several lanes is being replaced
	// make-before-break (§2.5); "" otherwise.
	fault   wire.RestartReason
	gone    bool                    // the process was reaped
	cut     bool                    // killed at the end of shutdown's grace period (§9.4)
	retired chan wire.RestartReason // the restart reason, for the slot's supervisor

	// Recycling (PROTOCOL.md §9.7).
	served     int           // exchanges completed
	recycleAt  int           // served count that makes it due; 0 = never
	rssRetryAt time.Time     // no recycling for max_worker_rss before, after a failed replacement
	recycling  bool          // a replacement is starting
	recycled   bool          // replaced: it finishes its exchange, then gets EOF
	recycle    chan struct{} // wakes the supervisor to start a replacement
}

// Lease is a lane as the pool hands it to an exchange: the pipes (the
// embedded worker.Lane), concrete, and the lane's state. W is its Member, as
// the pool knows the lane's worker.
type Lease struct {
	*worker.Lane
	W     *Member
	state laneState // changed by laneTo only
}

func newMember(w *worker.Worker) *Member {
	m := &Member{Worker: w, retired: make(chan wire.RestartReason, 1), recycle: make(chan struct{}, 1)}
	for _, l := range w.Lanes {
		m.lanes = append(m.lanes, &Lease{Lane: l, W: m})
	}
	return m
}

// Hold makes w a member of no slot whose lane 1 carries one exchange, as
// through its handshake and a take: for tests that play the worker's side
// of the pipes.
func (p *Pool) Hold(w *worker.Worker) *Member {
	m := newMember(w)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.workerTo(m, evHandshook)
	p.laneTo(m.First(), evTake)
	return m
}

// First is lane 1, the one handshakes run on (§2.5).
func (m *Member) First() *Lease { return m.lanes[0] }

// serving is the lanes both sides use once the handshake is answered.
func (m *Member) serving() []*Lease { return m.lanes[:m.InUse] }

// workerTo moves w along workerTable, keeping the idle list in step: a
// worker is in it exactly while idle, the one offered last at its end. It
// reports whether the transition was legal.
func (p *Pool) workerTo(w *Member, ev workerEvent) bool {
	next, ok := workerStep[w.state][ev].next()
	if !ok {
		p.badTransition(fmt.Sprintf("w%d pid %d: worker event %s in state %s", w.ID, w.Pid, ev, w.state))
		return false
	}
	if w.state == wsIdle {
		p.removeIdleLocked(w)
	}
	w.state = next
	if next == wsIdle {
		p.idle = append(p.idle, w)
	}
	return true
}

// laneTo moves l along laneTable, keeping its worker's busy and draining
// counts in step. It reports whether the transition was legal.
func (p *Pool) laneTo(l *Lease, ev laneEvent) bool {
	next, ok := laneStep[l.state][ev].next()
	if !ok {
		p.badTransition(fmt.Sprintf("w%d pid %d lane %d: lane event %s in state %s", l.W.ID, l.W.Pid, l.N, ev, l.state))
		return false
	}
	l.W.busy -= b2i(l.state == laneBusy) - b2i(next == laneBusy)
	l.W.draining -= b2i(l.state == laneDraining) - b2i(next == laneDraining)
	l.state = next
	return true
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// badTransition logs a transition the tables do not hold. Tests fail on it
// (badTransitionHook); in production the state stays as it was.
func (p *Pool) badTransition(what string) {
	p.log.Errorf("bad_transition: %s", what)
	if badTransitionHook != nil {
		badTransitionHook(what)
	}
}

// badTransitionHook, when set (by tests), is called on every refused
// transition.
var badTransitionHook func(what string)

func (p *Pool) removeIdleLocked(w *Member) {
	for i, x := range p.idle {
		if x == w {
			p.idle = append(p.idle[:i], p.idle[i+1:]...)
			return
		}
	}
}

// Unhold takes a member made by Hold out of the idle list, where its
// exchange's end put it, once its test is done with it.
func (p *Pool) Unhold(m *Member) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if m.state == wsIdle {
		p.workerTo(m, evRetire)
	}
}

// RetiredReason is the restart reason m was handed to its supervisor with,
// if it was and nobody took it yet.
func (m *Member) RetiredReason() (wire.RestartReason, bool) {
	select {
	case r := <-m.retired:
		return r, true
	default:
		return "", false
	}
}
