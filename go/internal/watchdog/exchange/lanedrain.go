package exchange

import (
	"net/http"
	"strings"

	"github.com/afterburn-dev/afterburn/go/internal/watchdog/wire"
)

// An exchange past its deadline (PROTOCOL.md §8.6, §2.5). The client is
// answered 504 at once (or its response aborted, §8.7); the worker is not
// killed at once: the library cancels the handler itself 50 ms after the
// deadline (§5.2), and, with several lanes, is also asked to over the cancel
// pipe. When the late response can be read afresh, its lane drains: the
// response is read to its end within cancel_grace and dropped, then the lane
// is free again and the worker lives on. When it cannot, the worker gets
// cancel_grace to clean up, then it is killed (one lane) or the lane is
// faulted (several, lanes.go): its worker is replaced make-before-break. A
// worker with one lane is a worker with L = 1: the same path serves both.

// cancelExchange ends x, whose deadline passed. requestWritten says the
// whole request reached the pipe. The result is run's.
func (x *Exchange) cancelExchange(requestWritten bool) bool {
	w, l, p := x.w, x.l, x.env.Pool
	if x.token.Set() && w.InUse > 1 {
		if err := w.Cancel(x.token); err != nil {
			x.env.Log.Warnf("w%d: cannot write the cancellation of request %s: %v", w.ID, x.id, err)
		} else {
			x.env.M.LaneCancels.Inc()
		}
	}
	// Only a response not begun can be read afresh: the head reader and the
	// chunk reader do not resume in the middle of what they read. Without
	// tokens (§4.6) a late response could not be told from a stale one.
	switch {
	case requestWritten && !x.respBegun && x.token.Set():
		x.env.Log.Warnf("w%d passed the deadline of request %s%s: cancelled; its late response will be dropped", w.ID, x.id, l.Label())
		p.StartDrain(l)
		// The id is copied: it may be a piece of storage the next request
		// on the client's connection reuses (newFunctionRequest).
		go p.Drain(l, x.token, x.r.Method, strings.Clone(x.id))
	case !x.token.Set():
		x.env.Log.Warnf("w%d passed the deadline of request %s%s: its library does not list exchange (PROTOCOL.md §4.6), so a late response could not be told from a stale one; stopped after cancel_grace %v", w.ID, x.id, l.Label(), x.env.Cfg.CancelGrace)
		go p.StopAfterGrace(l)
	default:
		x.env.Log.Warnf("w%d passed the deadline of request %s%s with its request or response under way; stopped after cancel_grace %v", w.ID, x.id, l.Label(), x.env.Cfg.CancelGrace)
		go p.StopAfterGrace(l)
	}
	if !x.headSent {
		x.env.Fail(x.rw, wire.ErrTimeout, x.entry)
		return false
	}
	if x.respDone {
		return false
	}
	panic(http.ErrAbortHandler) // §8.7
}
