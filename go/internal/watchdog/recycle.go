package watchdog

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"time"
)

// Worker recycling, PROTOCOL.md §9.7: a worker that has served max_requests,
// lived max_age or grown past max_worker_rss is replaced make-before-break.
// Its replacement starts while it goes on serving; once the replacement has
// answered its handshake, the old worker finishes the exchange it may hold and
// then gets EOF on its request pipe, and exits 0 (§9.4). No request is
// dropped, and none waits for a cold start because of recycling.

// rssCheckEvery bounds how often a worker's resident size is read from /proc.
const rssCheckEvery = time.Second

// withJitter adds up to a tenth of n to n, so that workers started together
// are not all recycled together.
func withJitter[T ~int | ~int64](n T) T {
	if n <= 0 {
		return n
	}
	return n + T(rand.Int64N(int64(n)/10+1))
}

// planRecycle sets a new worker's request budget.
func (p *pool) planRecycle(w *worker) {
	if p.cfg.MaxRequests > 0 {
		w.recycleAt = withJitter(p.cfg.MaxRequests)
	}
}

// recycleDueLocked reports why w, having just completed an exchange, should
// be recycled, or "". p.mu is held.
func (p *pool) recycleDueLocked(w *worker) string {
	if w.recycling || w.recycled {
		return ""
	}
	if w.recycleAt > 0 && w.served >= w.recycleAt {
		return fmt.Sprintf("served %d requests", w.served)
	}
	if p.cfg.MaxWorkerRSS > 0 && time.Since(w.rssChecked) >= rssCheckEvery {
		w.rssChecked = time.Now()
		if rss := residentBytes(w.pid); rss > p.cfg.MaxWorkerRSS {
			return fmt.Sprintf("resident size %d bytes over max_worker_rss", rss)
		}
	}
	return ""
}

// startRecycleLocked asks w's supervisor for a replacement. p.mu is held.
func (p *pool) startRecycleLocked(w *worker, why string) {
	w.recycling = true
	p.log.printf("w%d pid %d is due for recycling (%s): starting its replacement", w.id, w.pid, why)
	select {
	case w.recycle <- struct{}{}:
	default:
	}
}

// replace starts w's successor in slot s while w keeps serving. On success w
// is retired gently and the successor returned; on failure w serves on and
// tries again after another tenth of its budget.
func (p *pool) replace(s *slot, w *worker) *worker {
	nw, reason, err := p.startOne(s)
	if err != nil && p.isClosing() {
		p.mu.Lock()
		s.w = w
		p.mu.Unlock()
		return nil
	}
	if err != nil {
		p.m.restarts.WithLabelValues(reason).Inc()
		p.log.printf("w%d: the replacement for recycling pid %d failed: %v; it serves on", s.id, w.pid, err)
		p.mu.Lock()
		s.w = w
		w.recycling = false
		w.recycleAt = w.served + max(p.cfg.MaxRequests/10, 1)
		p.mu.Unlock()
		return nil
	}
	p.mu.Lock()
	// It may have died while its successor started: count that instead.
	reason = "recycled"
	if w.state == wsRetired {
		select {
		case reason = <-w.retired:
		default:
		}
	}
	w.recycled = true
	switch w.state {
	case wsIdle:
		p.removeIdleLocked(w)
		w.state = wsDraining
		w.closeRequest()
	case wsBusy:
		// release closes its request pipe once its exchange is over.
	}
	p.mu.Unlock()
	p.initSucceeded(s, nw)
	p.m.restarts.WithLabelValues(reason).Inc()
	p.wg.Add(1)
	go p.reapRecycled(w)
	return nw
}

// reapRecycled waits for a recycled worker to exit after its EOF, killing it
// if it lingers past shutdown_timeout, and releases its pipes.
func (p *pool) reapRecycled(w *worker) {
	defer p.wg.Done()
	t := time.NewTimer(p.cfg.ShutdownTimeout)
	defer t.Stop()
	select {
	case <-w.exited:
	case <-t.C:
		p.log.printf("w%d pid %d did not exit after recycling: killing it", w.id, w.pid)
		w.kill()
		<-w.exited
	}
	w.closePipes()
	p.waitLogs(w)
	p.log.printf("w%d pid %d recycled (%s)", w.id, w.pid, w.exitStatus())
}

// residentBytes is a process's resident set size (VmRSS), 0 if unknown.
func residentBytes(pid int) int64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}
