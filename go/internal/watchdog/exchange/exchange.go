package exchange

import (
	"io"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/afterburn-dev/afterburn/go/internal/watchdog/buffer"
	"github.com/afterburn-dev/afterburn/go/internal/watchdog/config"
	"github.com/afterburn-dev/afterburn/go/internal/watchdog/front"
	"github.com/afterburn-dev/afterburn/go/internal/watchdog/obs"
	"github.com/afterburn-dev/afterburn/go/internal/watchdog/pool"
	"github.com/afterburn-dev/afterburn/go/internal/watchdog/rawio"
	"github.com/afterburn-dev/afterburn/go/internal/watchdog/wire"
)

// bodyFailure is why the request body could not be written in full.
type bodyFailure int32

const (
	BodyOK       bodyFailure = iota
	bodyTooLarge             // a chunked body crossed max_request_body (§7.2)
	bodyClient               // the client went away or stalled (§6.4)
	bodyWorker               // the request pipe failed: the worker's fault
)

// exchangeEnv is what an exchange needs of the watchdog around it; the
// Watchdog makes one in New.
type Env struct {
	Cfg     *config.Config
	Log     *obs.Logger
	M       *obs.Metrics
	Pool    *pool.Pool
	Buffers *buffer.RespBuffers // PROTOCOL.md §6.1 (respbuffer.go)
	// Rejoin takes back the client connections spliced exchanges took
	// (hijack.go); set by serve before the first request.
	Rejoin *front.Handoff
	// Fail answers an error the watchdog raised (PROTOCOL.md §8.1).
	Fail func(rw http.ResponseWriter, t wire.ErrorType, e *obs.AccessEntry)
	// WriteTimeout bounds writing a response (§10.2); 0: none.
	WriteTimeout time.Duration
	// Stopping is set once the watchdog shuts down (§9.4): a spliced
	// response (hijack.go) then says Connection: close, as net/http's and
	// the front's do, and its connection is not given back.
	Stopping *atomic.Bool
}

// Exchange is one request carried by one worker (PROTOCOL.md §4).
type Exchange struct {
	env      *Env
	w        *pool.Member // l's worker
	l        *pool.Lease  // the pipes it runs on (PROTOCOL.md §2.5)
	rw       http.ResponseWriter
	rc       *http.ResponseController // made when first needed (controller)
	hj       *hijackedResponse        // rw, when the body is spliced (hijack.go)
	rb       *buffer.RespBuffer       // the response body's buffer, when it has one (respbuffer.go)
	r        *http.Request
	id       string
	target   string
	deadline time.Time // zero: no exec_timeout
	entry    *obs.AccessEntry
	token    wire.ExchangeToken // PROTOCOL.md §4.6; zero when the worker takes none

	headLen  int  // bytes of the request head written to the worker
	headSent bool // the response head went to the client
	// body is where the request body comes from: the client's, or on a
	// second attempt (§9.3) the bytes the first worker never read followed
	// by the rest of the client's.
	body io.Reader
	// replay keeps a copy of the body bytes sent, while they could all be
	// sitting unread in the pipe (at most replayMax), so that a worker that
	// dies without reading any of them does not lose the request (§9.3).
	replay      []byte
	replayLost  bool  // more was sent than replay keeps
	bodyWritten int64 // bytes of body framing and data written to the pipe
	respDone    bool  // the response was read to its end
	respBegun   bool  // a byte of the response was read (lanedrain.go)
	unsent      int   // bytes of head and inline body still buffered when writing them failed
	closeAfter  bool  // the worker sent Connection: close
	// aborting is closed by the body goroutine before it kills the worker
	// because the body cannot be completed (§6.4).
	aborting chan struct{}
	scratch  [24]byte
	extra    [3]wire.RespField // writeWorkerHead's fields beside the worker's
	// inline is a small body read whole before the head was written, to go
	// with it in one write (PROTOCOL.md §6.1); nil when the body streams.
	inline []byte
	// buffered is the whole body, read before the worker was taken (§6.6);
	// nil when the body comes from the client as the exchange runs.
	buffered *buffer.BufferedBody
}

// Begin makes x one attempt at carrying r, answered on rw, on lease l: a
// second attempt (§9.3) begins afresh. entry is r's access-log entry, whose
// request id the exchange carries (§5.1); body is where the request body
// comes from, and buffered the whole body when it was read first (§6.6).
func (x *Exchange) Begin(env *Env, l *pool.Lease, rw http.ResponseWriter, r *http.Request, target string,
	deadline time.Time, entry *obs.AccessEntry, body io.Reader, buffered *buffer.BufferedBody) {
	*x = Exchange{env: env, w: l.W, l: l, rw: rw, r: r, id: entry.RequestID, target: target,
		deadline: deadline, entry: entry, body: body, buffered: buffered}
}

// Replayed is the copy of the body bytes sent that a second attempt
// replays (§9.3): empty when more was sent than it keeps.
func (x *Exchange) Replayed() []byte { return x.replay }

// controller is net/http's ResponseController on x.rw, made on first use:
// most exchanges never need one.
func (x *Exchange) controller() *http.ResponseController {
	if x.rc == nil {
		x.rc = http.NewResponseController(x.rw)
	}
	return x.rc
}

// Flush sends what x.rw holds to the client, as ResponseController.Flush
// does, without making one for it.
func (x *Exchange) Flush() error {
	if f, ok := x.rw.(interface{ FlushError() error }); ok {
		return f.FlushError()
	}
	return x.controller().Flush()
}

// Run writes the request, forwards the response, and gives the worker back
// or has it replaced. It panics with http.ErrAbortHandler when the exchange
// failed after the response head went out (PROTOCOL.md §8.7). It returns
// true, having answered nothing, when the worker died without reading a byte
// of a bodiless request: the caller sends it to another worker (§9.3).
func (x *Exchange) Run() (neverRead bool) {
	w, l := x.w, x.l
	// PROTOCOL.md §6.1: a buffered response goes on to the client after the
	// worker was given back; the exchange ends, or is aborted (§8.7), only
	// once it is out (respbuffer.go).
	defer x.awaitBuffered()
	// PROTOCOL.md §5.2: the deadline runs to the end of the response; every
	// read and write on the worker's pipes stops there, or a grain after it
	// (rawio.Coarse: the pipes keep one deadline for consecutive requests).
	pipesBy := rawio.Coarse(x.deadline, x.env.Cfg.ExecTimeout)
	l.SetDeadlines(pipesBy, pipesBy)

	var fail *wire.Failure
	var bodyDone chan bodyFailure
	headWritten := false // the head, and an inline body, reached the pipe
	if x.buffered != nil {
		if x.buffered.Small() {
			x.inline = x.buffered.Mem // §6.1: with its head, in one write
		}
	} else if n := x.r.ContentLength; n > 0 && n <= buffer.InlineBodyMax {
		if t := x.readInline(); t != "" {
			// PROTOCOL.md §6.1, §6.4: no byte of the request reached the
			// worker, so it goes back to the pool as it was.
			x.env.Pool.Release(l, "")
			x.env.Log.Printf("the client did not deliver the %d-byte body of request %s", n, x.id)
			x.rw.Header().Set("Connection", "close")
			x.env.Fail(x.rw, t, x.entry)
			return false
		}
	}
	if err := x.writeHead(); err != nil {
		fail = wire.Classify(err)
		// What never left the buffer never reached the worker (§9.3): a
		// worker with lanes can be killed, for another lane's crash, while
		// this head is written (§2.5).
		x.unsent = l.BW.Buffered()
	} else {
		headWritten = true
		if x.r.ContentLength != 0 && x.inline == nil {
			send := x.sendBody
			if x.buffered == nil && x.hijack() {
				// §6.1: the body is spliced (hijack.go). The client's
				// connection is the exchange's until its end, then given
				// back or closed; also on the panic of §8.7, which
				// net/http recovers without closing a taken connection.
				defer func() { x.hj.Close(!x.headSent || x.respDone) }()
				send = x.spliceBody
			}
			// PROTOCOL.md §6.2: write the body while reading the response.
			x.controller().EnableFullDuplex()
			bodyDone = make(chan bodyFailure, 1)
			x.aborting = make(chan struct{})
			go func() { bodyDone <- send() }()
		}
		fail = x.forward()
	}

	bf, caused := BodyOK, true
	if bodyDone != nil {
		if fail != nil {
			select {
			case bf = <-bodyDone:
			case <-x.aborting:
				bf = <-bodyDone // the body failed first and killed the worker
			default:
				// Unblock the body goroutine wherever it waits: on the
				// worker (stopWorker) or on the client (read deadline). The
				// client's connection cannot be reused after that, and
				// whatever the body reports now is a consequence.
				if fail == wire.FailTimeout {
					// §8.6: the worker gets cancel_grace before any kill.
					l.Wake()
				} else {
					x.stopWorker()
				}
				x.controller().SetReadDeadline(time.Now())
				x.rw.Header().Set("Connection", "close")
				bf, caused = <-bodyDone, false
			}
		} else {
			bf = <-bodyDone // §6.3: back to the pool only once the body is written
		}
	}
	if bf != BodyOK {
		x.rw.Header().Set("Connection", "close") // the body was not read to its end
	}
	switch {
	case !caused:
	case bf == bodyTooLarge:
		fail = &wire.Failure{Reason: wire.ReasonRequestAborted, Type: wire.ErrBodyTooLarge} // §6.4, §7.2
	case bf == bodyClient:
		fail = &wire.Failure{Reason: wire.ReasonRequestAborted, Type: wire.ErrBadRequest} // §6.4
	case bf == bodyWorker && fail == nil:
		fail = wire.FailCrashed // it stopped reading its request
	}
	if fail == wire.FailTimeout && w.WasKilled() && (x.deadline.IsZero() || time.Now().Before(x.deadline)) {
		// Its worker was killed for another reason (another lane's fault,
		// §2.5, or the end of shutdown's grace, §9.4), not this deadline.
		fail = wire.FailCrashed
	}
	if fail == wire.FailTimeout {
		// PROTOCOL.md §8.6, §2.5: the exchange is cancelled and its lane
		// drained, or, when it cannot be, stopped after cancel_grace.
		return x.cancelExchange(headWritten && bf == BodyOK && caused)
	}
	if fail == wire.FailCrashed && w.InUse > 1 {
		// A crash of the worker (every lane fails, §8.4), or one lane
		// closed (§2.5): its exit decides, if it comes.
		w.AwaitExit()
	}

	if fail == nil {
		var reason wire.RestartReason
		if l.BR.Buffered() > 0 {
			// PROTOCOL.md §9.6: bytes after the end of the response.
			reason = x.env.Pool.IdleCheck(l)
		} else if x.closeAfter {
			reason = wire.ReasonWorkerClosed // §4.4: delivered, then replaced
		}
		x.env.Pool.Release(l, reason)
		return false
	}

	// PROTOCOL.md §9.3: every byte of the request still in the pipe means the
	// worker never saw it (the idle-exit race), so no handler ran for it.
	// Asked before release, which closes the pipes.
	if fail == wire.FailExchange && w.InUse == 1 {
		// §4.6: the worker is alive and may still read the request. Only
		// once it is dead is the unread count below final.
		w.Kill()
		<-w.Exited
	}
	// PROTOCOL.md §9.4: the end of shutdown's grace period killed the
	// worker; the request is answered 503, not retried.
	cut := x.env.Pool.IsAbandoned()
	// A worker with several lanes that lives on may still read the request
	// (§2.5): the count is final only once it has exited.
	final := w.InUse == 1 || w.HasExited()
	neverRead = !cut && final && (fail == wire.FailCrashed || fail == wire.FailExchange) && !x.headSent && caused && !x.replayLost &&
		(bf == BodyOK || bf == bodyWorker) && x.headLen > 0 &&
		int64(l.UnreadRequestBytes()) == int64(x.headLen)+x.bodyWritten-int64(x.unsent)

	switch {
	case cut:
		x.env.Log.Warnf("w%d: request %s cut short at the end of shutdown_timeout", w.ID, x.id)
		fail = &wire.Failure{Reason: fail.Reason, Type: wire.ErrUnavailable}
	case fail == wire.FailExchange:
		x.env.M.ProtocolErrors.WithLabelValues("exchange").Inc()
		if neverRead {
			x.env.Log.Warnf("w%d answered with a response that is not request %s's (PROTOCOL.md §4.6) before reading it: sending it to another worker", w.ID, x.id)
		} else {
			x.env.Log.Warnf("w%d answered request %s with a response that is not its own (PROTOCOL.md §4.6): replacing the worker", w.ID, x.id)
		}
	case fail.Reason == wire.ReasonBadResponse:
		x.env.M.ProtocolErrors.WithLabelValues("bad_response").Inc()
		x.env.Log.Warnf("w%d sent a malformed response to request %s", w.ID, x.id)
	case fail.Reason == wire.ReasonCrashed:
		if neverRead {
			x.env.Log.Warnf("w%d exited before reading request %s: sending it to another worker", w.ID, x.id)
		} else {
			x.env.Log.Warnf("w%d exited or closed a pipe during request %s", w.ID, x.id)
		}
	case fail.Reason == wire.ReasonRequestAborted:
		x.env.Log.Warnf("w%d: the body of request %s could not be completed: replacing the worker", w.ID, x.id)
	}
	x.env.Pool.Release(l, fail.Reason)
	if neverRead {
		return true
	}
	if !x.headSent {
		x.env.Fail(x.rw, fail.Type, x.entry)
		return false
	}
	if x.respDone {
		return false // the response was complete; only the worker had to go
	}
	// PROTOCOL.md §8.7: make the client's response visibly incomplete.
	panic(http.ErrAbortHandler)
}
