package afterburn

import (
	"fmt"
	"io"
	"math"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// version is the library version sent in AfterBurn-Library (PROTOCOL.md §3.2).
const version = "0.1.0"

// protocolVersion is the one version of PROTOCOL.md this library speaks.
const protocolVersion = "1"

// handshakeFields follow the status line (and the exchange token of a repeated
// handshake, §4.6) in the answer of PROTOCOL.md §3.2. The library implements §4.6 and
// §2.5, so it lists the capabilities exchange and streams, and says in
// AfterBurn-Streams how many lanes it serves at most. Both are sent always: a
// watchdog that gave the worker one lane ignores them (§2.5). preferred > 0 answers an
// offer of lanes (lanes=auto) with AfterBurn-Streams-Preferred; outside an offer the
// field means nothing and is not sent (§2.5 "Offered lanes").
func handshakeFields(maxLanes, preferred int) string {
	streams := "AfterBurn-Streams: " + strconv.Itoa(maxLanes) + "\r\n"
	if preferred > 0 {
		streams += "AfterBurn-Streams-Preferred: " + strconv.Itoa(preferred) + "\r\n"
	}
	return "AfterBurn-Protocol: " + protocolVersion + "\r\n" +
		"AfterBurn-Library: go/" + version + "\r\n" +
		"AfterBurn-Capabilities: exchange, streams\r\n" +
		streams +
		"Content-Length: 0\r\n" +
		"\r\n"
}

// defaultHandshake is the handshake reply of a worker that keeps the default maximum
// of lanes and was offered none.
var defaultHandshake = handshakeFields(defaultMaxLanes, 0)

// serve runs the exchanges of one lane one after another until the request stream
// ends between two requests, when it returns nil (PROTOCOL.md §9.4), or until the
// lane must stop: a framing error (§8.8), a failed handshake (§3.4), a handler that
// failed after its response started (§8.3), or a broken response pipe. The caller
// then closes the lane's pipes; once no lane is left the process exits non-zero
// (§2.5: a fault on one lane ends that lane alone).
func (c *conn) serve(h http.Handler) error {
	for {
		if c.blocking {
			c.passScheduler()
		}
		ex, err := c.readRequest()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			if perr, ok := err.(*protocolError); ok {
				c.sendError(perr.status, perr.typ, perr.requestID, perr.token, "")
			}
			return err
		}
		if ex.isHandshake {
			err = c.answerHandshake(ex)
		} else {
			// PROTOCOL.md §2.5: from here until its response is out, a line of the
			// cancel pipe naming the token cancels the request's context.
			c.inflight.add(ex)
			err = c.serveExchange(h, ex)
			c.inflight.remove(ex)
		}
		ex.cancel()
		if err != nil {
			return err
		}
	}
}

// schedulerPass is how often a lane on blocking pipes passes through the scheduler.
// The runtime's monitor takes a processor from a goroutine that sits in a system call
// when that processor has not been through the scheduler for 10 ms (forcePreemptNS in
// runtime/proc.go): it hands the processor to another thread, which wakes only to find
// nothing to do. A lane that reads blocking pipes never parks, so its processor never
// goes through the scheduler, and once the first 10 ms have passed the monitor takes it
// at nearly every read, every 20 µs of its watch (0.4 futex wakes and sleeps per request
// at c=8, issue 30). A yield every few milliseconds keeps the processor's tick fresh for
// one scheduler pass in thousands of requests. (The monitor's other path, taking a
// processor after 20 µs in one system call when no other processor is idle, is
// spareProcessor's.)
const schedulerPass = 4 * time.Millisecond

func (c *conn) passScheduler() {
	if now := time.Now(); now.Sub(c.passed) >= schedulerPass {
		runtime.Gosched()
		c.passed = now
	}
}

// answerHandshake answers §3.1's request itself; it never reaches the handler.
func (c *conn) answerHandshake(ex *exchange) error {
	if _, err := ex.body.drain(math.MaxInt64); err != nil {
		c.sendError(c.fatal.status, c.fatal.typ, "", ex.token, "")
		return err
	}
	if !offers(ex.handshake, protocolVersion) {
		// PROTOCOL.md §3.4: 400 version_mismatch listing the versions spoken, then exit.
		c.sendError(http.StatusBadRequest, typeVersionMismatch, "", ex.token, "AfterBurn-Protocol: "+protocolVersion+"\r\n")
		return &protocolError{status: http.StatusBadRequest, typ: typeVersionMismatch,
			detail: "the watchdog offers AfterBurn-Handshake " + quote([]byte(ex.handshake)) +
				"; this library speaks " + protocolVersion}
	}
	// §4.6: a repeated handshake (§3.5) carries a token, and its reply echoes it.
	b := appendStatusLine(c.bw.AvailableBuffer(), http.StatusOK, ex.token)
	c.bw.Write(append(b, c.handshake...))
	return c.bw.Flush()
}

// offers reports whether the comma-separated version list includes v.
func offers(list, v string) bool {
	for _, e := range strings.Split(list, ",") {
		if strings.Trim(e, " \t") == v {
			return true
		}
	}
	return false
}

// serveExchange runs the handler on one request and ends its response.
func (c *conn) serveExchange(h http.Handler, ex *exchange) error {
	w := &ex.w
	// As in net/http, the body is not readable once the exchange is over: the next
	// request's bytes follow it on the same stream.
	defer func() { ex.body.closed = true }()
	sentBefore := c.out.n
	panicked := c.runHandler(h, ex)
	ex.cancel()
	// Once a byte of the response reached the pipe its status is final. Until then
	// the library can still replace it with an error response.
	sent := c.out.n != sentBefore

	if panicked || c.fatal != nil {
		if sent {
			// PROTOCOL.md §8.3, §8.8: the response cannot be ended honestly. Leave it
			// incomplete (no last chunk, or short of its Content-Length); the caller
			// closes the pipe and exits non-zero.
			c.discardResponse(w)
			if c.fatal != nil {
				return c.fatal
			}
			return fmt.Errorf("afterburn: handler panicked after its response started (request %s)", ex.id)
		}
		c.discardResponse(w)
		if c.fatal == nil {
			ex.body.drain(maxPreDrain) // a framing error found here sets c.fatal
		}
		if c.fatal != nil {
			c.sendError(c.fatal.status, c.fatal.typ, ex.id, ex.token, "")
			return c.fatal
		}
		// PROTOCOL.md §8.3: 500 handler_error, and keep serving.
		if err := c.sendError(http.StatusInternalServerError, typeHandlerError, ex.id, ex.token, ""); err != nil {
			return err
		}
		_, err := ex.body.drain(math.MaxInt64)
		return err
	}

	if !w.committed {
		// Read a short unread body before answering, so that a framing error in it is
		// answered as one (§8.8) rather than after a response that looks fine.
		if _, err := ex.body.drain(maxPreDrain); err != nil {
			c.discardResponse(w)
			c.sendError(c.fatal.status, c.fatal.typ, ex.id, ex.token, "")
			return err
		}
	}
	if err := w.finish(); err != nil {
		return err
	}
	// PROTOCOL.md §6.3: drain what the handler left before reading the next request.
	_, err := ex.body.drain(math.MaxInt64)
	return err
}

// runHandler calls the handler and reports whether it panicked. PROTOCOL.md §8.3: the
// panic value and stack go to stderr as one record prefixed with the request id; they
// never reach the response. http.ErrAbortHandler aborts the response quietly, as in
// net/http.
func (c *conn) runHandler(h http.Handler, ex *exchange) (panicked bool) {
	normal := false
	defer func() {
		if normal {
			return
		}
		panicked = true
		v := recover()
		r := ex.req
		if v == http.ErrAbortHandler {
			c.logf("[%s] afterburn: handler aborted %s %s\n", ex.id, r.Method, r.RequestURI)
			return
		}
		buf := make([]byte, 64<<10)
		buf = buf[:runtime.Stack(buf, false)]
		c.logf("[%s] afterburn: panic serving %s %s: %v\n%s", ex.id, r.Method, r.RequestURI, v, buf)
	}()
	h.ServeHTTP(&ex.w, ex.req)
	normal = true
	return false
}

// discardResponse drops every response byte not yet written to the pipe.
func (c *conn) discardResponse(w *response) {
	w.done = true
	c.bw.Reset(&c.out)
	c.pend = c.pend[:0]
}

// sendError writes a complete §8.1 error response, with the exchange token of the
// request it answers (§4.6), and flushes it.
func (c *conn) sendError(status int, typ, requestID, token, extra string) error {
	c.bw.Write(appendErrorResponse(c.bw.AvailableBuffer(), status, typ, requestID, token, extra))
	return c.bw.Flush()
}

func (c *conn) logf(format string, args ...any) {
	if c.log != nil {
		fmt.Fprintf(c.log, format, args...)
	}
}
