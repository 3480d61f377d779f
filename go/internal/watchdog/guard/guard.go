package guard

// The client head guard: PROTOCOL.md §10.5.
//
// net/http is the watchdog's boundary with the network and it is lax where
// a proxy in front of the watchdog may not be: it lets Transfer-Encoding win
// over Content-Length and keeps the connection, accepts bare LF line ends,
// unfolds obs-fold and takes identical duplicate Content-Length lines. Each
// of those lets a front proxy and the watchdog disagree on where a request
// ends (request smuggling). The guard sits between the client's socket and
// net/http and lets no such head through.
//
// Theory of operation. Every accepted client connection is a guardConn.
// net/http reads from it; it reads from the socket into a small buffer of
// its own and runs the checker (guard_checker.go) over the new bytes, once:
//
//   - a request head is held back until it is complete (its empty line) and
//     checked, then released to net/http in one piece;
//   - body bytes are released as they arrive, never buffered: the checker
//     tracks framing only as far as it needs to find the next head
//     (Content-Length: count; chunked: size lines, data, CRLF, trailers);
//     while it is inside body data and holds nothing, net/http's Read goes
//     straight to the socket, bounded by the bytes left in that data;
//   - at the first offence the bytes before the offending head (or line)
//     are still released, the offending bytes never are, and nothing after
//     them is read for net/http again.
//
// How a rejection is answered. The error response of §8.1 has to follow the
// responses of the valid requests before the bad head on the same
// connection, in order, and the connection has to close after it. net/http
// already does exactly that for requests, so the guard hands it one: in
// place of the bad head it releases a synthetic head (GET of a target that
// holds a random token of this watchdog and that no client can know) and
// then EOF. ServeHTTP recognises the target, finds the rejection on the
// connection (ConnContext) and answers it with §8.1, Connection: close,
// counts it and writes its access-log line. This keeps every interaction
// with net/http's connection handling ordinary:
//
//   - net/http closes a connection whose Read returns EOF, and its
//     background read (running while a handler runs, to notice a client
//     that leaves) cancels the request on EOF. Returning EOF at the bad head
//     would cut off the valid request still in its handler; the guard
//     instead gives the background read the synthetic head's first byte,
//     which net/http keeps as the start of the next (pipelined) request.
//   - The EOF that follows the synthetic head reaches net/http only while
//     the synthetic request is handled (its background read) or after;
//     the handler of that request does not depend on the client.
//   - Read deadlines are net/http's (read_timeout, the idle timeout), set
//     on this conn and applied to every socket read, except while part of a
//     head is held: net/http has not seen a byte of it, so it would still
//     be waiting for a next request under its idle timeout (90 s), or
//     reading in the background without a deadline. The head then has a
//     deadline of its own, read_timeout from its first byte (§10.5). When
//     that passes, the head is rejected like an offending one, answered
//     408 request_timeout; a connection on which no head has begun is left
//     to net/http's deadlines and closed without a response.
//   - net/http also sets a deadline in the past to end its background read
//     (abortPendingRead) and then reads on. That timeout is not the
//     client's: it goes to net/http as it came, and the guard's state is
//     left as it was.
//   - CloseWrite is passed through, so net/http's closeWriteAndWait still
//     half-closes before it closes.
//   - When a valid request before the bad head ends the connection itself
//     (a 413, Connection: close, HTTP/1.0), net/http never reads the
//     synthetic head: the bad head is then neither answered nor counted,
//     and it still reaches nothing.
//
// A rejection inside a chunked body (a bad chunk-size line, chunk data not
// followed by CRLF, a bad trailer line) comes while net/http and a worker
// are already reading that body. The guard then releases nothing more and
// fails every later Read with a read error; the watchdog meets it as a body
// that cannot be completed (§6.4): the worker is replaced and the client
// gets 400 bad_request if no head was sent yet.
//
// Only the client listener is guarded. The metrics listener (metrics_port)
// serves /metrics from the watchdog itself: no worker is behind it, so
// there is nothing to smuggle a request into, and it is scraped by the
// operator's own monitoring rather than reached through the front proxy.

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/afterburn-dev/afterburn/go/internal/watchdog/obs"
	"github.com/afterburn-dev/afterburn/go/internal/watchdog/rawio"
)

// guardBufSize is the guard's buffer; it grows only for a head that does
// not fit, up to the head bound.
const guardBufSize = 4096

// guardBufs holds the guard's buffers while no bytes are held: an idle
// keep-alive connection holds none, and a request costs no allocation.
var guardBufs = sync.Pool{New: func() any { return new([guardBufSize]byte) }}

// clientGuard is what every guarded connection of one watchdog shares.
type Guard struct {
	maxHead     int
	readTimeout time.Duration // a head's time from its first byte; 0 = none
	log         *obs.Logger
	// Target and synthetic are the stand-in request that carries a
	// rejection through net/http to ServeHTTP; target holds a random token
	// so that no client can send it.
	Target    string
	synthetic []byte
}

func New(maxHeaderBytes int, readTimeout time.Duration, log *obs.Logger) *Guard {
	var token [16]byte
	rand.Read(token[:])
	target := "/.afterburn-rejected/" + hex.EncodeToString(token[:])
	return &Guard{
		maxHead:     maxHeaderBytes + headSlack,
		readTimeout: readTimeout,
		log:         log,
		Target:      target,
		synthetic:   []byte("GET " + target + " HTTP/1.1\r\nHost: afterburn\r\n\r\n"),
	}
}

// guardListener guards every connection it accepts.
type Listener struct {
	net.Listener
	Guard *Guard
}

func (l Listener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &Conn{Conn: c, raw: rawConn(c), g: l.Guard, chk: newChecker(l.Guard.maxHead)}, nil
}

// rejection is a client request the guard refused.
type rejection struct {
	*RejectReason
	InBody bool      // found inside a chunked body (§6.4 answers it)
	At     time.Time // when it was found
	Method string    // from the offending head's request line, "-" when unusable
	Path   string    // ditto, without the query (§9.5)
}

// errBodyFraming is the read error net/http gets after a rejection inside
// a chunked body. It is a *net.OpError with Op "read" so that net/http
// treats it as a failed read: it closes the connection and writes nothing
// of its own.
var errBodyFraming = errors.New("watchdog: malformed chunked request body (PROTOCOL.md §10.5)")

// guardConn is a client connection whose bytes pass the checker before
// net/http reads them. net/http reads from one goroutine at a time (its
// background read included), so Read needs no lock; rej is read by
// handlers. Close does not touch the buffer, so that a Close from another
// goroutine (Server.Close) cannot return it to the pool under a Read.
type Conn struct {
	net.Conn
	raw *rawio.FD // the socket's reads and writes (rawio)
	g   *Guard
	chk checker
	buf []byte
	// buf[lo:hi] were read from the socket and not yet returned to
	// net/http; the first free of them may be returned.
	lo, hi, free int
	err          error // a socket error, returned once the free bytes are out
	Rej          atomic.Pointer[rejection]
	rest         []byte // after a rejection: what net/http reads before final
	final        error

	// Read deadlines. SetReadDeadline comes from other goroutines than
	// Read (net/http's abortPendingRead), so these are guarded by dl.
	dl       sync.Mutex
	httpDL   time.Time // the deadline net/http (or an exchange) set
	aborting bool      // httpDL was past when set: a read cut short on purpose
	headDL   time.Time // the held head's deadline (PROTOCOL.md §10.5); zero when none is held
	// The deadline in force goes on the socket only when a read may wait on
	// it: at once while a read is under way (inRead: net/http's
	// abortPendingRead), else just before the next read. Of the six deadlines
	// net/http sets for a request, three then reach the socket, each a timer
	// update. A connection whose socket is read around this type (a spliced
	// exchange, hijack.go) has them put at once (eager).
	inRead, eager bool
	onSocket      time.Time // the deadline on the socket, once onSocketSet
	onSocketSet   bool
	// Read's own: the held head's deadline is set (headDL, by Read only),
	// and the checker's count of heads when it was.
	headArmed bool
	headNo    uint32
	// Hold's: the holder's fn, and heldStep bound once.
	holdFn, holdStep func() bool
}

func (gc *Conn) Read(p []byte) (int, error) {
	for {
		if gc.free > 0 {
			n := copy(p, gc.buf[gc.lo:gc.lo+gc.free])
			gc.lo += n
			gc.free -= n
			if gc.lo == gc.hi {
				gc.releaseBuf()
			}
			return n, nil
		}
		if gc.final != nil {
			if len(gc.rest) > 0 {
				n := copy(p, gc.rest)
				gc.rest = gc.rest[n:]
				return n, nil
			}
			return 0, gc.final
		}
		if gc.err != nil {
			err := gc.err
			gc.err = nil
			return 0, err
		}
		if gc.chk.state == stEnd {
			return 0, io.EOF
		}
		if gc.lo == gc.hi {
			// Inside body data with nothing held: straight from the socket.
			if k := gc.chk.passable(); k > 0 {
				if len(p) > k {
					p = p[:k]
				}
				n, err := gc.socketRead(p)
				gc.chk.passed(uint64(n))
				return n, err
			}
		}
		gc.fill()
	}
}

// fill reads from the socket once and runs the checker over what came.
func (gc *Conn) fill() {
	if gc.raw.WouldWait() {
		gc.err = rawio.ErrWouldWait // held (Hold): the wait for more is the holder's
		return
	}
	if gc.buf == nil {
		gc.buf = guardBufs.Get().(*[guardBufSize]byte)[:]
	}
	if gc.hi == len(gc.buf) {
		if gc.lo > 0 {
			gc.hi = copy(gc.buf, gc.buf[gc.lo:gc.hi])
			gc.lo = 0
		} else {
			// A head longer than the buffer; the checker stops it at the
			// head bound, so this stays under twice the bound.
			gc.buf = append(gc.buf, make([]byte, len(gc.buf))...)
		}
	}
	n, err := gc.socketRead(gc.buf[gc.hi:])
	if n > 0 {
		gc.hi += n
		var why *RejectReason
		gc.free, why = gc.chk.scan(gc.buf[gc.lo:gc.hi])
		if why != nil {
			gc.reject(why)
		}
		gc.trackHead()
	}
	if err != nil && gc.final == nil {
		if gc.headTimedOut(err) {
			gc.reject(gc.chk.timedOut()) // PROTOCOL.md §10.5: 408
			gc.trackHead()
			return
		}
		gc.err = err
	}
}

// trackHead gives a head that has begun to arrive, and is held, a deadline
// of its own: read_timeout from its first byte (PROTOCOL.md §10.5); and
// hands the socket back to net/http's deadline once no head is held. Empty
// lines before a request line begin nothing.
func (gc *Conn) trackHead() {
	held := gc.buf[gc.lo+gc.free : gc.hi]
	begun := gc.g.readTimeout > 0 && gc.chk.state == stHead && len(bytes.TrimLeft(held, "\r\n")) > 0
	switch {
	case begun && (!gc.headArmed || gc.headNo != gc.chk.heads):
		gc.headArmed, gc.headNo = true, gc.chk.heads
		gc.setHeadDeadline(time.Now().Add(gc.g.readTimeout))
	case !begun && gc.headArmed:
		gc.headArmed = false
		gc.setHeadDeadline(time.Time{})
	}
}

func (gc *Conn) setHeadDeadline(t time.Time) {
	gc.dl.Lock()
	defer gc.dl.Unlock()
	gc.headDL = t
	gc.setSocketDeadlineLocked()
}

// headTimedOut reports whether err is the held head's own deadline passing,
// not net/http cutting a read short.
func (gc *Conn) headTimedOut(err error) bool {
	if !gc.headArmed || !errors.Is(err, os.ErrDeadlineExceeded) {
		return false
	}
	gc.dl.Lock()
	defer gc.dl.Unlock()
	return !gc.aborting && !time.Now().Before(gc.headDL)
}

// SetReadDeadline records net/http's deadline and puts on the socket the
// one in force: net/http's, or while a head is held the head's, unless
// net/http is cutting a read short (a deadline already past).
func (gc *Conn) SetReadDeadline(t time.Time) error {
	return gc.setReadDeadline(t, !t.IsZero() && !t.After(time.Now()))
}

// SetReadDeadlineAhead is SetReadDeadline for a deadline known to lie
// ahead (a timeout counted from now): it cannot cut a read short, so no
// clock is read to tell.
func (gc *Conn) SetReadDeadlineAhead(t time.Time) error { return gc.setReadDeadline(t, false) }

func (gc *Conn) setReadDeadline(t time.Time, aborting bool) error {
	gc.dl.Lock()
	defer gc.dl.Unlock()
	gc.httpDL, gc.aborting = t, aborting
	return gc.setSocketDeadlineLocked()
}

// SetDeadline is SetReadDeadline and the socket's SetWriteDeadline
// (net/http clears both of a hijacked connection).
func (gc *Conn) SetDeadline(t time.Time) error {
	if err := gc.Conn.SetWriteDeadline(t); err != nil {
		return err
	}
	return gc.SetReadDeadline(t)
}

// setSocketDeadlineLocked puts the deadline in force on the socket, now or,
// when no read is under way, before the next one.
func (gc *Conn) setSocketDeadlineLocked() error {
	if !gc.inRead && !gc.eager {
		return nil // socketRead puts it
	}
	return gc.putDeadlineLocked()
}

// putDeadlineLocked puts the deadline in force on the socket: net/http's,
// or while a head is held the head's, unless net/http is cutting a read
// short.
func (gc *Conn) putDeadlineLocked() error {
	t := gc.httpDL
	if !gc.headDL.IsZero() && !gc.aborting {
		t = gc.headDL
	}
	if gc.onSocketSet && t.Equal(gc.onSocket) {
		return nil
	}
	gc.onSocket, gc.onSocketSet = t, true
	return gc.Conn.SetReadDeadline(t)
}

// socketRead reads from the socket under the deadline in force.
func (gc *Conn) socketRead(p []byte) (int, error) {
	gc.dl.Lock()
	gc.inRead = true
	gc.putDeadlineLocked()
	gc.dl.Unlock()
	n, err := gc.raw.Read(p)
	gc.dl.Lock()
	gc.inRead = false
	gc.dl.Unlock()
	return n, err
}

// Write writes to the socket (rawio), under the deadline its
// SetWriteDeadline set.
func (gc *Conn) Write(p []byte) (int, error) { return gc.raw.Write(p) }

// rawConn is the rawio.FD of an accepted connection: a TCP one's raw, any
// other's through its own Read and Write.
func rawConn(c net.Conn) *rawio.FD {
	if tc, ok := c.(*net.TCPConn); ok {
		return rawio.Conn(tc)
	}
	return rawio.Plain(c)
}

// CanHold reports whether Hold is available: a TCP connection read raw.
func (gc *Conn) CanHold() bool { return gc.raw.CanHold() }

// Hold calls fn inside one wait on the socket's readability until fn
// returns true (rawio.FD.Hold): inside it, Read returns
// rawio.ErrWouldWait where it would have waited, and fn then returns
// false to wait. While it waits, a deadline set reaches the socket at
// once, as during a Read; the socket's error ends the hold and is Hold's
// (the next Read meets it again).
func (gc *Conn) Hold(fn func() bool) error {
	if gc.holdStep == nil {
		gc.holdStep = gc.heldStep
	}
	gc.holdFn = fn
	err := gc.raw.Hold(gc.holdStep)
	gc.holdFn = nil
	gc.setInRead(false)
	return err
}

// heldStep runs the holder's fn, and before a wait puts the deadline in
// force on the socket and lets the next ones through at once.
func (gc *Conn) heldStep() bool {
	gc.setInRead(false)
	if gc.holdFn() {
		return true
	}
	gc.dl.Lock()
	gc.inRead = true
	gc.putDeadlineLocked()
	gc.dl.Unlock()
	return false
}

func (gc *Conn) setInRead(v bool) {
	gc.dl.Lock()
	gc.inRead = v
	gc.dl.Unlock()
}

// ReadsAround tells gc that its socket is now read around it (hijack.go):
// every deadline goes on the socket at once, from now on.
func (gc *Conn) ReadsAround() {
	gc.dl.Lock()
	defer gc.dl.Unlock()
	gc.eager = true
	gc.putDeadlineLocked()
}

// releaseBuf gives the buffer back once it holds nothing. A buffer grown
// for a long head is left to the garbage collector.
func (gc *Conn) releaseBuf() {
	if len(gc.buf) == guardBufSize {
		guardBufs.Put((*[guardBufSize]byte)(gc.buf))
	}
	gc.buf, gc.lo, gc.hi = nil, 0, 0
}

// reject records an offence found in buf[lo+free:hi] and sets what net/http
// reads after the bytes before it.
func (gc *Conn) reject(why *RejectReason) {
	bad := gc.buf[gc.lo+gc.free : gc.hi]
	gc.hi = gc.lo + gc.free
	r := &rejection{RejectReason: why, InBody: !gc.chk.headOffence, At: time.Now(), Method: "-", Path: "-"}
	if r.InBody {
		gc.final = &net.OpError{Op: "read", Net: "tcp", Source: gc.RemoteAddr(), Addr: gc.LocalAddr(), Err: errBodyFraming}
		gc.g.log.Printf("request body from %s rejected: %s; closing the connection", gc.RemoteAddr(), why.Text)
	} else {
		r.Method, r.Path = requestLineParts(bad)
		gc.rest, gc.final = gc.g.synthetic, io.EOF
	}
	gc.Rej.Store(r)
}

// Held is how many bytes Read returns without reading the socket: body
// bytes the guard read ahead and released. A spliced exchange (hijack.go)
// reads them first, then the rest of the body from the socket past the
// guard, and accounts for those with bypassed, so that the guard finds the
// next head where it starts (PROTOCOL.md §10.5).
func (gc *Conn) Held() int { return gc.free }

// Bypassed accounts for n body bytes read from the socket past the guard
// while it held none, as Read does for those it lets through unbuffered.
func (gc *Conn) Bypassed(n int64) {
	if n > 0 {
		gc.chk.passed(uint64(n))
	}
}

// CloseWrite lets net/http half-close the connection before it closes it
// (closeWriteAndWait), as it does on a bare *net.TCPConn.
func (gc *Conn) CloseWrite() error {
	if cw, ok := gc.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// requestLineParts is the method and the path without the query of a
// rejected head, for its access-log line (§9.5); "-" for a part that is not
// plain visible ASCII, which would not be safe in a log line.
func requestLineParts(head []byte) (method, path string) {
	line := head
	if i := bytes.IndexAny(line, "\r\n"); i >= 0 {
		line = line[:i]
	}
	m, rest, _ := bytes.Cut(line, []byte(" "))
	target, _, _ := bytes.Cut(rest, []byte(" "))
	target, _, _ = bytes.Cut(target, []byte("?"))
	return visible(m, 32), visible(target, 1024)
}

func visible(b []byte, maxLen int) string {
	if len(b) == 0 || len(b) > maxLen {
		return "-"
	}
	for _, ch := range b {
		if ch <= ' ' || ch >= 0x7f {
			return "-"
		}
	}
	return string(b)
}

// guardConnKey is the context key of a request's guardConn (ConnContext).
type ConnKey struct{}

// WithConn gives ctx the guarded connection c is, or is over (a connection
// the front handed to net/http: front/conn.go), under ConnKey.
func WithConn(ctx context.Context, c net.Conn) context.Context {
	switch gc := c.(type) {
	case *Conn:
		return context.WithValue(ctx, ConnKey{}, gc)
	case interface{ Guarded() *Conn }:
		return context.WithValue(ctx, ConnKey{}, gc.Guarded())
	}
	return ctx
}
