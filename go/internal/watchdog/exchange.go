package watchdog

import (
	"io"
	"net/http"
	"time"
)

// bodyFailure is why the request body could not be written in full.
type bodyFailure int32

const (
	bodyOK       bodyFailure = iota
	bodyTooLarge             // a chunked body crossed max_request_body (§7.2)
	bodyClient               // the client went away or stalled (§6.4)
	bodyWorker               // the request pipe failed: the worker's fault
)

// exchangeEnv is what an exchange needs of the watchdog around it; the
// Watchdog makes one in New.
type exchangeEnv struct {
	cfg     *Config
	log     *logger
	m       *metrics
	pool    *pool
	buffers *respBuffers // PROTOCOL.md §6.1 (respbuffer.go)
	// rejoin takes back the client connections spliced exchanges took
	// (hijack.go); set by serve before the first request.
	rejoin *rejoinListener
	// fail answers an error the watchdog raised (PROTOCOL.md §8.1).
	fail func(rw http.ResponseWriter, t errorType, e *accessEntry)
	// writeTimeout bounds writing a response (§10.2); 0: none.
	writeTimeout time.Duration
}

// exchange is one request carried by one worker (PROTOCOL.md §4).
type exchange struct {
	env      *exchangeEnv
	w        *member // l's worker
	l        *lease  // the pipes it runs on (PROTOCOL.md §2.5)
	rw       http.ResponseWriter
	rc       *http.ResponseController // made when first needed (controller)
	hj       *hijackedResponse        // rw, when the body is spliced (hijack.go)
	rb       *respBuffer              // the response body's buffer, when it has one (respbuffer.go)
	r        *http.Request
	id       string
	target   string
	deadline time.Time // zero: no exec_timeout
	entry    *accessEntry
	token    exchangeToken // PROTOCOL.md §4.6; zero when the worker takes none

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
	// inline is a small body read whole before the head was written, to go
	// with it in one write (PROTOCOL.md §6.1); nil when the body streams.
	inline []byte
	// buffered is the whole body, read before the worker was taken (§6.6);
	// nil when the body comes from the client as the exchange runs.
	buffered *bufferedBody
}

// controller is net/http's ResponseController on x.rw, made on first use:
// most exchanges never need one.
func (x *exchange) controller() *http.ResponseController {
	if x.rc == nil {
		x.rc = http.NewResponseController(x.rw)
	}
	return x.rc
}

// flush sends what x.rw holds to the client, as ResponseController.Flush
// does, without making one for it.
func (x *exchange) flush() error {
	if f, ok := x.rw.(interface{ FlushError() error }); ok {
		return f.FlushError()
	}
	return x.controller().Flush()
}

// run writes the request, forwards the response, and gives the worker back
// or has it replaced. It panics with http.ErrAbortHandler when the exchange
// failed after the response head went out (PROTOCOL.md §8.7). It returns
// true, having answered nothing, when the worker died without reading a byte
// of a bodiless request: the caller sends it to another worker (§9.3).
func (x *exchange) run() (neverRead bool) {
	w, l := x.w, x.l
	// PROTOCOL.md §6.1: a buffered response goes on to the client after the
	// worker was given back; the exchange ends, or is aborted (§8.7), only
	// once it is out (respbuffer.go).
	defer x.awaitBuffered()
	// PROTOCOL.md §5.2: the deadline runs to the end of the response; every
	// read and write on the worker's pipes stops there.
	l.respR.SetReadDeadline(x.deadline)
	l.reqW.SetWriteDeadline(x.deadline)

	var fail *failure
	var bodyDone chan bodyFailure
	headWritten := false // the head, and an inline body, reached the pipe
	if x.buffered != nil {
		if x.buffered.small() {
			x.inline = x.buffered.mem // §6.1: with its head, in one write
		}
	} else if n := x.r.ContentLength; n > 0 && n <= inlineBodyMax {
		if t := x.readInline(); t != "" {
			// PROTOCOL.md §6.1, §6.4: no byte of the request reached the
			// worker, so it goes back to the pool as it was.
			x.env.pool.release(l, "")
			x.env.log.printf("the client did not deliver the %d-byte body of request %s", n, x.id)
			x.rw.Header().Set("Connection", "close")
			x.env.fail(x.rw, t, x.entry)
			return false
		}
	}
	if err := x.writeHead(); err != nil {
		fail = classify(err)
		// What never left the buffer never reached the worker (§9.3): a
		// worker with lanes can be killed, for another lane's crash, while
		// this head is written (§2.5).
		x.unsent = l.bw.Buffered()
	} else {
		headWritten = true
		if x.r.ContentLength != 0 && x.inline == nil {
			send := x.sendBody
			if x.buffered == nil && x.hijack() {
				// §6.1: the body is spliced (hijack.go). The client's
				// connection is the exchange's until its end, then given
				// back or closed; also on the panic of §8.7, which
				// net/http recovers without closing a taken connection.
				defer func() { x.hj.close(!x.headSent || x.respDone) }()
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

	bf, caused := bodyOK, true
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
				if fail == failTimeout {
					// §8.6: the worker gets cancel_grace before any kill.
					l.wake()
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
	if bf != bodyOK {
		x.rw.Header().Set("Connection", "close") // the body was not read to its end
	}
	switch {
	case !caused:
	case bf == bodyTooLarge:
		fail = &failure{reasonRequestAborted, errBodyTooLarge} // §6.4, §7.2
	case bf == bodyClient:
		fail = &failure{reasonRequestAborted, errBadRequest} // §6.4
	case bf == bodyWorker && fail == nil:
		fail = failCrashed // it stopped reading its request
	}
	if fail == failTimeout && w.wasKilled() && (x.deadline.IsZero() || time.Now().Before(x.deadline)) {
		// Its worker was killed for another reason (another lane's fault,
		// §2.5, or the end of shutdown's grace, §9.4), not this deadline.
		fail = failCrashed
	}
	if fail == failTimeout {
		// PROTOCOL.md §8.6, §2.5: the exchange is cancelled and its lane
		// drained, or, when it cannot be, stopped after cancel_grace.
		return x.cancelExchange(headWritten && bf == bodyOK && caused)
	}
	if fail == failCrashed && w.inUse > 1 {
		// A crash of the worker (every lane fails, §8.4), or one lane
		// closed (§2.5): its exit decides, if it comes.
		w.awaitExit()
	}

	if fail == nil {
		var reason restartReason
		if l.br.Buffered() > 0 {
			// PROTOCOL.md §9.6: bytes after the end of the response.
			reason = x.env.pool.idleCheck(l)
		} else if x.closeAfter {
			reason = reasonWorkerClosed // §4.4: delivered, then replaced
		}
		x.env.pool.release(l, reason)
		return false
	}

	// PROTOCOL.md §9.3: every byte of the request still in the pipe means the
	// worker never saw it (the idle-exit race), so no handler ran for it.
	// Asked before release, which closes the pipes.
	if fail == failExchange && w.inUse == 1 {
		// §4.6: the worker is alive and may still read the request. Only
		// once it is dead is the unread count below final.
		w.kill()
		<-w.exited
	}
	// PROTOCOL.md §9.4: the end of shutdown's grace period killed the
	// worker; the request is answered 503, not retried.
	cut := x.env.pool.isAbandoned()
	// A worker with several lanes that lives on may still read the request
	// (§2.5): the count is final only once it has exited.
	final := w.inUse == 1 || w.hasExited()
	neverRead = !cut && final && (fail == failCrashed || fail == failExchange) && !x.headSent && caused && !x.replayLost &&
		(bf == bodyOK || bf == bodyWorker) && x.headLen > 0 &&
		int64(l.unreadRequestBytes()) == int64(x.headLen)+x.bodyWritten-int64(x.unsent)

	switch {
	case cut:
		x.env.log.warnf("w%d: request %s cut short at the end of shutdown_timeout", w.id, x.id)
		fail = &failure{fail.reason, errUnavailable}
	case fail == failExchange:
		x.env.m.protocolErrors.WithLabelValues("exchange").Inc()
		if neverRead {
			x.env.log.warnf("w%d answered with a response that is not request %s's (PROTOCOL.md §4.6) before reading it: sending it to another worker", w.id, x.id)
		} else {
			x.env.log.warnf("w%d answered request %s with a response that is not its own (PROTOCOL.md §4.6): replacing the worker", w.id, x.id)
		}
	case fail.reason == reasonBadResponse:
		x.env.m.protocolErrors.WithLabelValues("bad_response").Inc()
		x.env.log.warnf("w%d sent a malformed response to request %s", w.id, x.id)
	case fail.reason == reasonCrashed:
		if neverRead {
			x.env.log.warnf("w%d exited before reading request %s: sending it to another worker", w.id, x.id)
		} else {
			x.env.log.warnf("w%d exited or closed a pipe during request %s", w.id, x.id)
		}
	case fail.reason == reasonRequestAborted:
		x.env.log.warnf("w%d: the body of request %s could not be completed: replacing the worker", w.id, x.id)
	}
	x.env.pool.release(l, fail.reason)
	if neverRead {
		return true
	}
	if !x.headSent {
		x.env.fail(x.rw, fail.etype, x.entry)
		return false
	}
	if x.respDone {
		return false // the response was complete; only the worker had to go
	}
	// PROTOCOL.md §8.7: make the client's response visibly incomplete.
	panic(http.ErrAbortHandler)
}
