package pool

import (
	"time"

	"github.com/afterburn-dev/afterburn/go/internal/watchdog/spawn"
	"github.com/afterburn-dev/afterburn/go/internal/watchdog/wire"
)

// reasonServed is how a worker under isolation=request ends after its one
// exchange: not a restart (§9.1), so not counted as one.

// endServedLocked ends w after its one exchange (§2.7): its lane takes no
// other, and its supervisor starts the slot's next spare at once and hands w
// to finishServed. p.mu is held.
func (p *Pool) endServedLocked(l *Lease) {
	w := l.W
	p.laneTo(l, evClose)
	if w.state == wsRetired {
		return // already handed to its supervisor (retireLocked)
	}
	p.workerTo(w, evRetire)
	p.setSlotLocked(p.slots[w.ID-1], slotStarting)
	w.retired <- wire.ReasonServed
}

// finishServed lets w exit after its exchange: EOF on its request pipe
// (§9.4), then isolation_grace before its process group is killed, which is
// counted. It runs beside the slot's next worker; the pool's close waits
// for it.
func (p *Pool) finishServed(w *Member) {
	defer p.wg.Done()
	w.First().CloseRequest()
	t := time.NewTimer(p.cfg.IsolationGrace)
	defer t.Stop()
	select {
	case <-w.Exited:
	case <-t.C:
		p.m.IsolationKills.Inc()
		p.log.Warnf("w%d pid %d%s did not exit within isolation_grace %v after its exchange: killing its process group",
			w.ID, w.Pid, spawn.RequestLabel(w.LastRequest.Load()), p.cfg.IsolationGrace)
		w.Kill()
		<-w.Exited
	}
	w.ClosePipes()
}
