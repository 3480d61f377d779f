package pool

import "github.com/afterburn-dev/afterburn/go/internal/watchdog/config"

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

// watch returns a channel closed at the next change of a slot's state, of
// the crash-looping count or when a request joins the queue, so that tests wait on the pool's own signal
// instead of sleeping.
func (p *Pool) Watch() <-chan struct{} {
	p.Mu.Lock()
	defer p.Mu.Unlock()
	if p.watchCh == nil {
		p.watchCh = make(chan struct{})
	}
	return p.watchCh
}

// Gauges (metrics.go) and /_/ready.

func (p *Pool) Inflight() int {
	p.Mu.Lock()
	defer p.Mu.Unlock()
	return p.held
}

func (p *Pool) Queued() int {
	p.Mu.Lock()
	defer p.Mu.Unlock()
	return len(p.waiters)
}

// slotCount is the number of slots whose state is named state.
func (p *Pool) SlotCount(state string) int {
	p.Mu.Lock()
	defer p.Mu.Unlock()
	n := 0
	for _, s := range p.Slots {
		if s.state.String() == state {
			n++
		}
	}
	return n
}

// laneCount is the number of lanes of live workers in the state named
// state: free, busy or draining.
func (p *Pool) LaneCount(state string) int { return p.LaneCounts().Get(state) }

func (p *Pool) CrashLoopingCount() int {
	p.Mu.Lock()
	defer p.Mu.Unlock()
	return p.looping
}

// status is the JSON body of /_/health and /_/ready (PROTOCOL.md §9.2).
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

// snapshot counts slots by state; ready is true when one worker has
// answered its handshake.
func (p *Pool) Snapshot() (st Status, ready bool) {
	p.Mu.Lock()
	defer p.Mu.Unlock()
	for _, s := range p.Slots {
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
	if p.Cfg.Spawn == config.SpawnFork && p.Spawn != nil {
		st.Started = map[string]int{"exec": 0, "fork": 0}
		for _, s := range p.Slots {
			if s.W != nil && s.W.Kind != "" && (s.state == slotIdle || s.state == slotBusy) {
				st.Started[s.W.Kind]++
			}
		}
		st.Template, st.TemplatePID = p.Spawn.Template()
	}
	if p.Cfg.Lanes > 1 {
		c := p.laneCountsLocked()
		st.Lanes = &c
	}
	// §2.7, §9.2: under isolation=request a slot is starting whenever its
	// spare was taken, so a ready template, which forks the next in
	// milliseconds, makes the pool ready too: readiness does not flap with
	// the load.
	serving := st.Idle+st.Busy > 0 || (p.Iso != nil && st.Template == "ready")
	return st, serving && !p.closing
}

// Template is the template's state for /_/ready and its pid (§2.6, §9.2):
// "" and 0 when there is no template mode.
func (p *Pool) Template() (state string, pid int) {
	p.Mu.Lock()
	sp := p.Spawn
	p.Mu.Unlock()
	if sp == nil {
		return "", 0
	}
	return sp.Template()
}

// WorkerPIDs are the pids of the slots' current workers.
func (p *Pool) WorkerPIDs() []int {
	p.Mu.Lock()
	defer p.Mu.Unlock()
	var pids []int
	for _, s := range p.Slots {
		if s.W != nil {
			pids = append(pids, s.W.Pid)
		}
	}
	return pids
}
