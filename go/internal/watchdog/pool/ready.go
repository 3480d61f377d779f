package pool

import (
	"github.com/afterburn-dev/afterburn/go/internal/watchdog/config"
	"github.com/afterburn-dev/afterburn/go/internal/watchdog/obs"
)

// The pool's slots by state, as /_/ready, /_/health (PROTOCOL.md §9.2) and
// the gauges of metrics.go (§10.4) show them, and the signal tests wait on.

// slotState is a worker slot's state as exported by /_/ready and the
// afterburn_workers gauge (PROTOCOL.md §9.2, §10.4).
type slotState int

const (
	slotStarting slotState = iota
	slotIdle
	slotBusy
	slotBackoff
	slotStopped
)

func (s slotState) String() string {
	switch s {
	case slotStarting:
		return "starting"
	case slotIdle:
		return "idle"
	case slotBusy:
		return "busy"
	case slotBackoff:
		return "backoff"
	}
	return "stopped"
}

// setSlotLocked changes a slot's state and wakes up watchers. p.mu is held.
func (p *Pool) setSlotLocked(s *slot, st slotState) {
	if s.state != st {
		s.state = st
		p.changedLocked()
	}
}

// changedLocked wakes up whoever waits in watch. p.mu is held.
func (p *Pool) changedLocked() {
	if p.watchCh != nil {
		close(p.watchCh)
		p.watchCh = nil
	}
}

// Watch returns a channel closed at the next change of a slot's state, of
// the crash-looping count or when a request joins the queue, so that tests wait on the pool's own signal
// instead of sleeping.
func (p *Pool) Watch() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.watchCh == nil {
		p.watchCh = make(chan struct{})
	}
	return p.watchCh
}

// Gauges (metrics.go) and /_/ready.

func (p *Pool) Inflight() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.held
}

func (p *Pool) Queued() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.waiters)
}

// SlotCount is the number of slots whose state is named state.
func (p *Pool) SlotCount(state string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, s := range p.slots {
		if s.state.String() == state {
			n++
		}
	}
	return n
}

// LaneCount is the number of lanes of live workers in the state named
// state: free, busy or draining.
func (p *Pool) LaneCount(state string) int { return p.LaneCounts().Get(state) }

func (p *Pool) CrashLoopingCount() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.looping
}

// Status is the JSON body of /_/health and /_/ready (PROTOCOL.md §9.2).
type Status struct {
	Starting     int `json:"starting"`
	Idle         int `json:"idle"`
	Busy         int `json:"busy"`
	Backoff      int `json:"backoff"`
	CrashLooping int `json:"crash_looping"`
	// Fork mode only (PROTOCOL.md §9.2): how the live workers were started,
	// and the template's state and pid. The template is not a worker.
	Started     map[string]int `json:"started,omitempty"`
	Template    string         `json:"template,omitempty"`
	TemplatePID int            `json:"template_pid,omitempty"`
	// With lanes > 1 (PROTOCOL.md §2.5, §9.2): lanes of live workers by state.
	Lanes *LaneCounts `json:"lanes,omitempty"`
}

// Snapshot counts slots by state; ready is true when one worker has
// answered its handshake.
func (p *Pool) Snapshot() (st Status, ready bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, s := range p.slots {
		switch s.state {
		case slotStarting:
			st.Starting++
		case slotIdle:
			st.Idle++
		case slotBusy:
			st.Busy++
		case slotBackoff:
			st.Backoff++
		}
	}
	st.CrashLooping = p.looping
	if p.cfg.Spawn == config.SpawnFork && p.spawn != nil {
		st.Started = map[string]int{"exec": 0, "fork": 0}
		for _, s := range p.slots {
			if s.w != nil && s.w.Kind != "" && (s.state == slotIdle || s.state == slotBusy) {
				st.Started[s.w.Kind]++
			}
		}
		st.Template, st.TemplatePID = p.spawn.Template()
	}
	if p.cfg.Lanes > 1 || p.cfg.OffersLanes() {
		c := p.laneCountsLocked()
		st.Lanes = &c
	}
	// §2.7, §9.2: under isolation=request a slot is starting whenever its
	// spare was taken, so a ready template, which forks the next in
	// milliseconds, makes the pool ready too: readiness does not flap with
	// the load.
	serving := st.Idle+st.Busy > 0 || (p.iso != nil && st.Template == "ready")
	return st, serving && !p.closing
}

// Template is the template's state for /_/ready and its pid (§2.6, §9.2):
// "" and 0 when there is no template mode.
func (p *Pool) Template() (state string, pid int) {
	p.mu.Lock()
	sp := p.spawn
	p.mu.Unlock()
	if sp == nil {
		return "", 0
	}
	return sp.Template()
}

// WorkerPIDs are the pids of the slots' current workers.
func (p *Pool) WorkerPIDs() []int {
	p.mu.Lock()
	defer p.mu.Unlock()
	var pids []int
	for _, s := range p.slots {
		if s.w != nil {
			pids = append(pids, s.w.Pid)
		}
	}
	return pids
}

// SlotWorker is slot id's current worker, nil in backoff.
func (p *Pool) SlotWorker(id int) *Member {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.slots[id-1].w
}

// ExitHandled reports whether the pool has handled w's exit (onExit).
func (p *Pool) ExitHandled(w *Member) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return w.gone
}

// Isolated reports whether workers serve one request each (isolation=request, §2.7).
func (p *Pool) Isolated() bool { return p.iso != nil }

// IsolationRoot is the directory that holds the workers' temporary
// directories under isolation=request (§2.7); "" otherwise, or before Start
// made it (Start sets p.iso under p.mu).
func (p *Pool) IsolationRoot() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.iso == nil {
		return ""
	}
	return p.iso.Root
}

// Fatal carries an error the watchdog cannot serve on (fail): Run returns
// the first.
func (p *Pool) Fatal() <-chan error { return p.fatal }

// SetMetrics gives the pool the metrics it counts on, which read its gauges
// in turn; before Start.
func (p *Pool) SetMetrics(m *obs.Metrics) { p.m = m }
