package pool

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/afterburn-dev/afterburn/go/internal/watchdog/wire"
)

// Worker recycling, PROTOCOL.md §9.7: a worker that has served max_requests,
// lived max_age or grown past max_worker_rss is replaced make-before-break.
// Its replacement starts while it goes on serving; once the replacement has
// answered its handshake, the old worker finishes the exchange it may hold and
// then gets EOF on its request pipe, and exits 0 (§9.4). No request is
// dropped, and none waits for a cold start because of recycling, with one
// exception: a worker that grows past its RSS ceiling (max_worker_rss plus
// a twentieth) while its replacement starts takes no more requests, so that
// a fast leak cannot take it far past the limit. Its resident size is read
// after every exchange: one pread(2) of /proc/PID/statm, kept open.

// rssRetryAfter is how long a worker over max_worker_rss whose replacement
// failed to start serves on before another is tried.
const rssRetryAfter = time.Second

// rssCeiling is the resident size past which a worker due for recycling
// takes no more requests until its replacement is ready (PROTOCOL.md §9.7).
func rssCeiling(limit int64) int64 { return limit + limit/20 }

// withJitter adds up to a tenth of n to n, so that workers started together
// are not all recycled together.
func withJitter[T ~int | ~int64](n T) T {
	if n <= 0 {
		return n
	}
	return n + T(rand.Int64N(int64(n)/10+1))
}

// planRecycle sets a new worker's request budget.
func (p *Pool) planRecycle(w *Member) {
	if p.cfg.MaxRequests > 0 {
		w.recycleAt = withJitter(p.cfg.MaxRequests)
	}
}

// recycleDueLocked reports why w, having just completed an exchange after
// which its resident size was rss (0 when not read), should be recycled, or
// "". p.mu is held.
func (p *Pool) recycleDueLocked(w *Member, rss int64) string {
	if w.recycling || w.recycled {
		return ""
	}
	if w.fault != "" {
		return string(w.fault) // §2.5: its last replacement failed; try again
	}
	if w.recycleAt > 0 && w.served >= w.recycleAt {
		return fmt.Sprintf("served %d requests", w.served)
	}
	if p.cfg.MaxWorkerRSS > 0 && rss > p.cfg.MaxWorkerRSS && time.Now().After(w.rssRetryAt) {
		return fmt.Sprintf("resident size %d bytes over max_worker_rss", rss)
	}
	return ""
}

// parkLocked takes w, just released with resident size rss, out of service
// when it is past its RSS ceiling while its replacement starts (PROTOCOL.md
// §9.7), and reports whether it did. Requests then wait for another worker
// or for the replacement. p.mu is held.
func (p *Pool) parkLocked(w *Member, rss int64) bool {
	if !w.recycling || w.recycled || p.closing || p.cfg.MaxWorkerRSS == 0 || rss <= rssCeiling(p.cfg.MaxWorkerRSS) {
		return false
	}
	if !p.workerTo(w, evPark) {
		return false
	}
	p.log.Warnf("w%d pid %d: resident size %d bytes is past max_worker_rss + 5%%: no more requests until its replacement is ready", w.ID, w.Pid, rss)
	return true
}

// startRecycleLocked asks w's supervisor for a replacement. p.mu is held.
func (p *Pool) startRecycleLocked(w *Member, why string) {
	p.log.Printf("w%d pid %d is due for recycling (%s): starting its replacement", w.ID, w.Pid, why)
	askReplacementLocked(w)
}

// askReplacementLocked wakes w's supervisor to start w's successor while w
// serves on (§9.7, and a fault on one of several lanes, §2.5). p.mu is held.
func askReplacementLocked(w *Member) {
	w.recycling = true
	select {
	case w.recycle <- struct{}{}:
	default:
	}
}

// replace starts w's successor in slot s while w keeps serving. On success w
// is retired gently and the successor returned; on failure w serves on and
// tries again after another tenth of its budget.
func (p *Pool) replace(s *slot, w *Member) *Member {
	nw, reason, err := p.startOne(s)
	if err != nil && p.isClosing() {
		p.mu.Lock()
		s.w = w
		if w.state == wsParked { // §9.4: it gets EOF like an idle worker
			p.drainWorkerLocked(w)
		}
		p.mu.Unlock()
		return nil
	}
	if err != nil {
		p.m.Restarted(reason)
		p.log.Warnf("w%d: the replacement for recycling pid %d failed: %v; it serves on", s.id, w.Pid, err)
		p.mu.Lock()
		s.w = w
		w.recycling = false
		w.recycleAt = w.served + max(p.cfg.MaxRequests/10, 1)
		w.rssRetryAt = time.Now().Add(rssRetryAfter)
		if w.state == wsParked {
			p.workerTo(w, evUnpark) // not in the idle list: offerLocked puts it there
			p.offerAllLocked(w)
		}
		p.mu.Unlock()
		return nil
	}
	p.mu.Lock()
	// It may have died while its successor started: count that instead. A
	// worker replaced for a fault on one of its lanes counts that (§2.5).
	reason = wire.ReasonRecycled
	if w.fault != "" {
		reason = w.fault
	}
	if w.state == wsRetired {
		select {
		case reason = <-w.retired:
		default:
		}
	}
	w.recycled = true
	if w.state != wsRetired {
		// Its free lanes get EOF now; busy ones once their exchange is
		// over (offerLocked).
		p.drainWorkerLocked(w)
	}
	p.mu.Unlock()
	// Counted before the successor is offered, as a retired worker's restart
	// is counted before its successor starts (supervise): whoever sees the
	// slot idle again (§9.2) sees the restart too.
	p.m.Restarted(reason)
	p.initSucceeded(s, nw)
	p.wg.Add(1)
	go p.reapRecycled(w, reason)
	return nw
}

// reapRecycled waits for a worker replaced make-before-break to exit after its
// EOF, killing it if it lingers past shutdown_timeout, and releases its pipes.
// reason is what its restart was counted as: "recycled", or the fault on one
// of its lanes (§2.5), which the log line names as the supervisor's does
// (logReplaced).
func (p *Pool) reapRecycled(w *Member, reason wire.RestartReason) {
	defer p.wg.Done()
	t := time.NewTimer(p.cfg.ShutdownTimeout)
	defer t.Stop()
	select {
	case <-w.Exited:
	case <-t.C:
		p.log.Warnf("w%d pid %d did not exit after recycling: killing it", w.ID, w.Pid)
		w.Kill()
		<-w.Exited
	}
	w.ClosePipes()
	p.waitLogs(w)
	if reason != wire.ReasonRecycled {
		p.logReplaced(w, reason)
		return
	}
	p.log.Printf("w%d pid %d recycled (%s)", w.ID, w.Pid, w.ExitStatus())
}
