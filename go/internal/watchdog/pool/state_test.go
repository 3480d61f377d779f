package pool

import (
	"io"
	"os"
	"strings"
	"testing"

	"github.com/afterburn-dev/afterburn/go/internal/watchdog/config"
	"github.com/afterburn-dev/afterburn/go/internal/watchdog/obs"
	"github.com/afterburn-dev/afterburn/go/internal/watchdog/worker"
)

// testMember is a member on real pipes of no process, in state st, whose
// lane 1 is in state ls, with the counts that state implies.
func testMember(t *testing.T, p *Pool, st workerState, ls laneState) *Member {
	t.Helper()
	reqR, reqW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	respR, respW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, f := range []*os.File{reqR, reqW, respR, respW} {
			f.Close()
		}
	})
	m := newMember(worker.New(1, reqW, reqR, respR))
	m.state = st
	if st == wsIdle {
		p.idle = append(p.idle, m)
	}
	l := m.First()
	l.state = ls
	m.busy, m.draining = b2i(ls == laneBusy), b2i(ls == laneDraining)
	return m
}

func statePool(t *testing.T) (*Pool, *[]string) {
	var refused []string
	p := New(&config.Config{Workers: 1}, obs.NewLogger(io.Discard, false))
	old := badTransitionHook
	badTransitionHook = func(what string) { refused = append(refused, what) }
	t.Cleanup(func() { badTransitionHook = old })
	return p, &refused
}

// TestWorkerTransitions walks every pair of worker state and event: a pair in
// the table moves to its next state, keeping the idle list in step; any
// other is refused, logged as bad_transition, and changes nothing.
func TestWorkerTransitions(t *testing.T) {
	legal := 0
	for st := workerState(0); st < workerStates; st++ {
		for ev := workerEvent(0); ev < workerEvents; ev++ {
			p, refused := statePool(t)
			m := testMember(t, p, st, laneFree)
			next, ok := workerTable[st][ev]
			p.mu.Lock()
			got := p.workerTo(m, ev)
			p.mu.Unlock()
			inIdle := len(p.idle) == 1 && p.idle[0] == m
			switch {
			case got != ok:
				t.Errorf("%s --%s--> legal=%v; table says %v", st, ev, got, ok)
			case ok && (m.state != next || inIdle != (next == wsIdle) || len(*refused) != 0):
				t.Errorf("%s --%s--> %s in idle list %v, refused %v; want %s", st, ev, m.state, inIdle, *refused, next)
			case !ok && (m.state != st || inIdle != (st == wsIdle) || len(*refused) != 1 || !strings.Contains((*refused)[0], "worker event "+ev.String())):
				t.Errorf("%s --%s--> (illegal) left %s, in idle list %v, refused %v", st, ev, m.state, inIdle, *refused)
			}
			if ok {
				legal++
			}
		}
	}
	if legal != 17 {
		t.Errorf("%d legal worker transitions; the table of state.go has 17", legal)
	}
}

// TestLaneTransitions walks every pair of lane state and event; the worker's
// busy and draining counts follow its lanes.
func TestLaneTransitions(t *testing.T) {
	legal := 0
	for st := laneState(0); st < laneStates; st++ {
		for ev := laneEvent(0); ev < laneEvents; ev++ {
			p, refused := statePool(t)
			m := testMember(t, p, wsBusy, st)
			l := m.First()
			next, ok := laneTable[st][ev]
			p.mu.Lock()
			got := p.laneTo(l, ev)
			p.mu.Unlock()
			want := st
			if ok {
				want = next
				legal++
			}
			if got != ok || l.state != want || len(*refused) != b2i(!ok) {
				t.Errorf("%s --%s--> %s legal=%v refused %v; want %s legal=%v", st, ev, l.state, got, *refused, want, ok)
			}
			if m.busy != b2i(want == laneBusy) || m.draining != b2i(want == laneDraining) {
				t.Errorf("%s --%s--> %s: busy %d draining %d", st, ev, l.state, m.busy, m.draining)
			}
		}
	}
	if legal != 5 {
		t.Errorf("%d legal lane transitions; the table of state.go has 5", legal)
	}
}

// TestSlotStateFollowsLanes: a worker's slot is busy while any of its lanes
// is busy or draining (PROTOCOL.md §9.2), idle when every lane is free.
func TestSlotStateFollowsLanes(t *testing.T) {
	for _, ls := range []laneState{laneFree, laneBusy, laneDraining} {
		p, _ := statePool(t)
		m := testMember(t, p, wsIdle, ls)
		p.mu.Lock()
		p.slotStateLocked(m)
		got := p.slots[0].state
		p.mu.Unlock()
		want := slotBusy
		if ls == laneFree {
			want = slotIdle
		}
		if got != want {
			t.Errorf("lane %s: slot %s; want %s", ls, got, want)
		}
	}
}
