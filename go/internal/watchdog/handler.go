package watchdog

import (
	"bytes"
	"encoding/json"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"time"
	"unsafe"

	"github.com/afterburn-dev/afterburn/go/internal/watchdog/buffer"
	"github.com/afterburn-dev/afterburn/go/internal/watchdog/config"
	"github.com/afterburn-dev/afterburn/go/internal/watchdog/exchange"
	"github.com/afterburn-dev/afterburn/go/internal/watchdog/front"
	"github.com/afterburn-dev/afterburn/go/internal/watchdog/guard"
	"github.com/afterburn-dev/afterburn/go/internal/watchdog/obs"
	"github.com/afterburn-dev/afterburn/go/internal/watchdog/wire"
)

// ServeHTTP answers the reserved paths of PROTOCOL.md §10.1 itself and
// hands every other request to a worker: /metrics too, unless metrics_port
// is MetricsOnPort.
func (wd *Watchdog) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	if r.RequestURI == wd.guard.Target && wd.serveRejected(rw, r) {
		return // PROTOCOL.md §10.5: stands for a head the guard rejected
	}
	switch r.URL.Path {
	case "/_/health":
		wd.serveStatus(rw, false)
		return
	case "/_/ready":
		wd.serveStatus(rw, true)
		return
	case "/metrics":
		if wd.cfg.MetricsPort == config.MetricsOnPort {
			wd.metricsHandler.ServeHTTP(rw, r)
			return
		}
	}
	wd.serveFunction(rw, r)
}

// serveStatus answers /_/health or /_/ready (PROTOCOL.md §9.2) with the
// counts of workers by state.
func (wd *Watchdog) serveStatus(rw http.ResponseWriter, readiness bool) {
	st, ready := wd.pool.Snapshot()
	ok := !wd.stopping.Load()
	if readiness {
		ok = ok && ready
	}
	body, _ := json.Marshal(st)
	rw.Header().Set("Content-Type", "application/json")
	rw.Header().Set("Cache-Control", "no-store")
	if !ok {
		rw.WriteHeader(http.StatusServiceUnavailable)
	}
	rw.Write(append(body, '\n'))
}

// functionRequest is what serving one client request keeps: its access-log
// entry and its exchange, in one allocation, or none (newFunctionRequest).
type functionRequest struct {
	entry obs.AccessEntry
	x     exchange.Exchange
	// id holds the digits of a request id the watchdog made: the entry's
	// RequestID is a string over them (requestIDIn).
	id [32]byte
}

// newFunctionRequest returns a zeroed functionRequest for a request that rw
// answers, and when the request began: on the front, the connection's own
// request, reused from one request to the next, and the front's reading of
// the clock (front.ConnScratch; issue 29: no allocation per request), else a
// new one, and now. Nothing keeps a pointer into it past serveFunction: what
// outlives the request (a drain's request id, §8.6; the isolated worker's
// last request, §2.7) is copied out.
func newFunctionRequest(rw http.ResponseWriter) (*functionRequest, time.Time) {
	cs, ok := rw.(front.ConnScratch)
	if !ok {
		return new(functionRequest), time.Now()
	}
	slot := cs.Scratch()
	if fr, ok := (*slot).(*functionRequest); ok {
		*fr = functionRequest{}
		return fr, cs.Began()
	}
	fr := new(functionRequest)
	*slot = fr
	return fr, cs.Began()
}

// serveFunction carries one client request through a worker.
func (wd *Watchdog) serveFunction(rw http.ResponseWriter, r *http.Request) {
	fr, began := newFunctionRequest(rw)
	fr.entry = obs.AccessEntry{
		Start:     began,
		RequestID: requestIDIn(&fr.id, r.Header, wd.cfg.TrustRequestID),
		Method:    r.Method,
		Path:      r.URL.EscapedPath(),
	}
	e := &fr.entry
	defer func() {
		// Runs on the panic of §8.7 too.
		d := time.Since(e.Start)
		wd.log.Access(e, d)
		wd.m.ObserveRequest(e.Status, d.Seconds())
	}()

	// PROTOCOL.md §7.2: an announced body over the limit never reaches a worker.
	if limit := wd.cfg.MaxRequestBody; limit > 0 && r.ContentLength > limit {
		// Closing the connection lets net/http answer at once instead of
		// first reading the unwanted body from the client.
		rw.Header().Set("Connection", "close")
		wd.fail(rw, wire.ErrBodyTooLarge, e)
		return
	}
	// PROTOCOL.md §7.1: net/http's MaxHeaderBytes is approximate; this is
	// the exact count, answered with the JSON body of §8.1.
	if wire.HeadSize(r) > wd.cfg.MaxHeaderBytes {
		wd.fail(rw, wire.ErrHeadersTooLarge, e)
		return
	}
	target := requestTarget(r)
	if target == "" {
		wd.fail(rw, wire.ErrBadRequest, e)
		return
	}
	// PROTOCOL.md §6.6: a body of known length is read whole before the
	// request takes a worker, or even a place in the queue.
	var buffered *buffer.BufferedBody
	received := e.Start
	if wd.cfg.RequestBuffering && r.ContentLength > 0 {
		b, t := wd.requests.BufferBody(r)
		switch {
		case t != "":
			rw.Header().Set("Connection", "close") // the body was not read to its end
			wd.fail(rw, t, e)
			return
		case b != nil:
			defer b.Release()
			buffered, received = b, time.Now()
		}
	}
	if t := wd.pool.Enter(); t != "" {
		wd.fail(rw, t, e)
		return
	}
	defer wd.pool.Leave()

	var deadline time.Time
	if d := wd.cfg.ExecTimeout; d > 0 {
		deadline = received.Add(d) // §5.2: queueing counts
	}
	// PROTOCOL.md §9.3: a request that a worker died without reading a byte
	// of goes to another worker, once, its body replayed.
	var body io.Reader = r.Body
	for attempt := 1; ; attempt++ {
		if buffered != nil {
			body = buffered.Reader() // §6.6: replayed whole, whatever its size
		}
		l, t, waited := wd.pool.Acquire(r.Context(), deadline)
		wd.m.QueueWait.Observe(waited.Seconds())
		if l == nil {
			if t == "" {
				// The client went away while queued. Abort rather than let
				// net/http send an empty 200 should the connection live on.
				e.Status = 499
				panic(http.ErrAbortHandler)
			}
			wd.fail(rw, t, e)
			return
		}
		// §5.2: the deadline passed in the queue, or during a first attempt.
		// A worker taken at once from a first attempt's start cannot be late.
		if (waited > 0 || attempt > 1) && !deadline.IsZero() && !time.Now().Before(deadline) {
			wd.pool.Release(l, "")
			wd.fail(rw, wire.ErrTimeout, e)
			return
		}
		e.Worker = l.W.ID
		if wd.pool.Isolated() {
			// §2.7: for the report of what it leaves behind, which comes
			// after this request (a copy: fr and its id digits are reused).
			id := strings.Clone(e.RequestID)
			l.W.LastRequest.Store(&id)
		}
		x := &fr.x // a second attempt's starts afresh (§9.3)
		x.Begin(wd.xenv, l, rw, r, target, deadline, e, body, buffered)
		if neverRead := x.Run(); !neverRead {
			return
		}
		if replay := x.Replayed(); buffered == nil && len(replay) > 0 {
			body = io.MultiReader(bytes.NewReader(replay), r.Body)
		}
		if attempt == 2 {
			wd.fail(rw, wire.ErrWorkerCrashed, e)
			return
		}
	}
}

// fail answers an error the watchdog raised (PROTOCOL.md §8.1) and counts it.
// While shutting down it closes the connection (§9.4).
func (wd *Watchdog) fail(rw http.ResponseWriter, t wire.ErrorType, e *obs.AccessEntry) {
	wd.m.Rejected.WithLabelValues(string(t)).Inc()
	if wd.stopping.Load() {
		rw.Header().Set("Connection", "close")
	}
	status, n := wire.WriteError(rw, t, e.RequestID)
	e.Status, e.Bytes = status, int64(n)
}

// requestID returns the request id of PROTOCOL.md §5.1: the client's
// X-Request-Id when it is 1–128 of [A-Za-z0-9._:-] and trusted (§5.6), else
// 32 random hex digits. They come from the runtime's per-thread ChaCha8
// generator (math/rand/v2), seeded from the system's random source: an id
// must not repeat and is not a secret (though these are not guessable
// either), and crypto/rand with hex.EncodeToString cost twice as much.
func requestID(h http.Header, trusted bool) string {
	return requestIDIn(new([32]byte), h, trusted)
}

// requestIDIn is requestID with a made id's digits written into buf, which
// the string shares: serveFunction passes its functionRequest's, one
// allocation per request fewer. buf must be on the heap and never written
// again, so the string stays whole as long as it is held.
func requestIDIn(buf *[32]byte, h http.Header, trusted bool) string {
	if v := h["X-Request-Id"]; trusted && len(v) > 0 && validRequestID(v[0]) {
		return v[0]
	}
	d := newRequestID(buf)
	return unsafe.String(&d[0], len(d))
}

// newRequestID writes 32 random hex digits into b and returns them.
func newRequestID(b *[32]byte) []byte {
	appendHex64(b[:0], rand.Uint64())
	appendHex64(b[:16], rand.Uint64())
	return b[:]
}

// hexPairs holds the two lower-case hex digits of every byte value.
const hexPairs = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f" +
	"202122232425262728292a2b2c2d2e2f303132333435363738393a3b3c3d3e3f" +
	"404142434445464748494a4b4c4d4e4f505152535455565758595a5b5c5d5e5f" +
	"606162636465666768696a6b6c6d6e6f707172737475767778797a7b7c7d7e7f" +
	"808182838485868788898a8b8c8d8e8f909192939495969798999a9b9c9d9e9f" +
	"a0a1a2a3a4a5a6a7a8a9aaabacadaeafb0b1b2b3b4b5b6b7b8b9babbbcbdbebf" +
	"c0c1c2c3c4c5c6c7c8c9cacbcccdcecfd0d1d2d3d4d5d6d7d8d9dadbdcdddedf" +
	"e0e1e2e3e4e5e6e7e8e9eaebecedeeeff0f1f2f3f4f5f6f7f8f9fafbfcfdfeff"

// appendHex64 appends the 16 hex digits of v, low byte first (as
// hex.Encode of its little-endian bytes): a pair per byte from hexPairs,
// where hex.Encode spends two table lookups and shifts per digit.
func appendHex64(b []byte, v uint64) []byte {
	for range 8 {
		i := int(v&0xff) * 2
		b = append(b, hexPairs[i], hexPairs[i+1])
		v >>= 8
	}
	return b
}

func validRequestID(s string) bool {
	if len(s) < 1 || len(s) > 128 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9',
			c == '.', c == '_', c == ':', c == '-':
		default:
			return false
		}
	}
	return true
}

// requestTarget is the origin-form target forwarded to the worker
// (PROTOCOL.md §4.2): as the client sent it, or the path and query of an
// absolute-form target. It is "" for targets without one (CONNECT).
func requestTarget(r *http.Request) string {
	if strings.HasPrefix(r.RequestURI, "/") {
		return r.RequestURI
	}
	if r.URL.IsAbs() {
		return r.URL.RequestURI()
	}
	return ""
}

// serveRejected answers the synthetic request that stands for a rejected
// head (PROTOCOL.md §10.5) with the error of §8.1 on a closing connection:
// counted, logged once with its reason, and access-logged without a
// worker. It returns false, and answers nothing, for a request that does
// not stand for a rejection.
func (wd *Watchdog) serveRejected(rw http.ResponseWriter, r *http.Request) bool {
	gc, _ := r.Context().Value(guard.ConnKey{}).(*guard.Conn)
	if gc == nil {
		return false
	}
	rej := gc.Rej.Load()
	if rej == nil || rej.InBody {
		return false
	}
	e := &obs.AccessEntry{Start: rej.At, RequestID: requestID(nil, false), Method: rej.Method, Path: rej.Path}
	wd.log.Printf("request %s from %s rejected: %s", e.RequestID, r.RemoteAddr, rej.Text)
	rw.Header().Set("Connection", "close")
	wd.fail(rw, rej.Type, e)
	wd.log.Access(e, time.Since(e.Start))
	wd.m.ObserveRequest(e.Status, time.Since(e.Start).Seconds())
	return true
}
