package watchdog

import (
	"time"
)

// reasonServed is how a worker under isolation=request ends after its one
// exchange: not a restart (§9.1), so not counted as one.

// endServedLocked ends w after its one exchange (§2.7): its lane takes no
// other, and its supervisor starts the slot's next spare at once and hands w
// to finishServed. p.mu is held.
func (p *pool) endServedLocked(l *lease) {
	w := l.w
	p.laneTo(l, evClose)
	if w.state == wsRetired {
		return // already handed to its supervisor (retireLocked)
	}
	p.workerTo(w, evRetire)
	p.setSlotLocked(p.slots[w.id-1], slotStarting)
	w.retired <- reasonServed
}

// finishServed lets w exit after its exchange: EOF on its request pipe
// (§9.4), then isolation_grace before its process group is killed, which is
// counted. It runs beside the slot's next worker; the pool's close waits
// for it.
func (p *pool) finishServed(w *member) {
	defer p.wg.Done()
	w.first().closeRequest()
	t := time.NewTimer(p.cfg.IsolationGrace)
	defer t.Stop()
	select {
	case <-w.exited:
	case <-t.C:
		p.m.isolationKills.Inc()
		p.log.warnf("w%d pid %d%s did not exit within isolation_grace %v after its exchange: killing its process group",
			w.id, w.pid, requestLabel(w.lastRequest.Load()), p.cfg.IsolationGrace)
		w.kill()
		<-w.exited
	}
	w.closePipes()
}
