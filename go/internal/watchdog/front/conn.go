package front

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"net/url"
	"sync"
	"syscall"
	"time"

	"github.com/afterburn-dev/afterburn/go/internal/watchdog/guard"
	"github.com/afterburn-dev/afterburn/go/internal/watchdog/rawio"
)

var errTooManyFiles = syscall.EMFILE

// bufSize is a connection's read buffer: a head that does not fit goes to
// net/http, whose reader has the same size, so that the bytes handed over
// fit its first read.
const bufSize = 4096

// maxPostHandlerRead is how much of a request body the handler left unread
// is read and discarded to keep the connection, as net/http does (its
// maxPostHandlerReadBytes); past it the connection closes.
const maxPostHandlerRead = 256 << 10

// lingerMax bounds the reading on, discarding, of a connection closed with
// part of its request body unread, as net/http's rstAvoidanceDelay.
const lingerMax = 500 * time.Millisecond

// conn is one client connection the front serves. Everything on it is the
// connection goroutine's, except the idle flag (Shutdown reads it).
type conn struct {
	srv   *Server
	gc    *guard.Conn
	bw    *bufio.Writer
	watch *clientWatch // the requests' context (watch.go)

	buf  *[bufSize]byte // from readBufs for the connection's life
	r, w int            // buf[r:w] were read and not consumed yet

	req   http.Request // reused for every request of the connection
	url   url.URL
	heads heads // the strings of the last head, reused (parse.go)
	resp  response
	body  body

	first bool // no request was read yet
	// The wait for the next head (readHead): its timeout, and its state
	// while it lasts, over a hold's wake-ups.
	wait                  time.Duration
	waiting, skip, peeked bool
	afterPOST             bool        // the last request was a POST
	heldFn                func() bool // heldSteps, bound once
	heldOut               stepResult  // why the last hold ended
	// writeBy is the socket's write deadline as the connection last set it
	// (rawio.Coarse: consecutive requests share one).
	writeBy time.Time

	mu   sync.Mutex
	idle bool // waiting for a head, nothing of it read
}

var writers = sync.Pool{New: func() any { return bufio.NewWriterSize(nil, bufSize) }}

// readBufs are the connections' read buffers, reused as net/http reuses its
// readers: a client that opens a connection per request (or a fault that
// closes one) then leaves 4 KiB less garbage each time.
var readBufs = sync.Pool{New: func() any { return new([bufSize]byte) }}

func newConn(s *Server, gc *guard.Conn) *conn {
	c := &conn{srv: s, gc: gc, buf: readBufs.Get().(*[bufSize]byte)}
	// The request's context carries the connection, as net/http's
	// ConnContext gives it (§10.5's rejection, the splice), and the local
	// address (the Host of §4.2 for a client that sent none).
	ctx := context.WithValue(context.Background(), http.LocalAddrContextKey, gc.LocalAddr())
	c.watch = &clientWatch{Context: guard.WithConn(ctx, gc), c: c}
	c.req = *(&http.Request{}).WithContext(c.watch)
	c.req.URL = &c.url
	c.req.Header = make(http.Header)
	c.req.Proto, c.req.ProtoMajor, c.req.ProtoMinor = "HTTP/1.1", 1, 1
	c.req.RemoteAddr = gc.RemoteAddr().String()
	return c
}

// setIdle marks the connection idle or not; it returns false, marking
// nothing, when the server shuts down and the connection is to close.
func (c *conn) setIdle(idle bool) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if idle && c.srv.closing.Load() {
		return false
	}
	c.idle = idle
	return true
}

// closeIfIdle ends the wait of an idle connection (Shutdown).
func (c *conn) closeIfIdle() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.idle {
		c.gc.SetReadDeadline(aLongTimeAgo)
	}
}

// closeNow ends the connection at once (Server.Close): shut both ways, the
// client sees it end and every read and write on it fails, and the
// connection's goroutine closes it. Closing the descriptor here would wait
// until that goroutine left its hold on the socket (serve), which may last
// as long as an exchange.
func (c *conn) closeNow() {
	tc, ok := c.gc.Conn.(*net.TCPConn)
	if !ok {
		c.gc.Close()
		return
	}
	tc.CloseRead()
	tc.CloseWrite()
	c.gc.SetDeadline(aLongTimeAgo)
}

func (c *conn) releaseWriter() {
	if c.bw != nil {
		c.bw.Reset(nil)
		writers.Put(c.bw)
		c.bw = nil
	}
}

// handOver gives the connection to net/http with the bytes read and not
// consumed: the head the front did not take, and what followed it.
func (c *conn) handOver() {
	pre := append([]byte(nil), c.buf[c.r:c.w]...)
	c.gc.SetReadDeadline(time.Time{})
	c.gc.SetWriteDeadline(time.Time{})
	c.srv.Handoff.Give(&handedConn{Conn: c.gc, pre: pre})
}

// exchange runs the handler on the request just parsed and finishes its
// response; it reports whether the connection carries on (stepNext). Held,
// the body is all in the buffer, and a linger, which reads the socket, is
// left to the caller (stepLinger).
func (c *conn) exchange(held bool) stepResult {
	req, start := &c.req, time.Now()
	c.body.reset(c, req.ContentLength)
	if req.ContentLength > 0 {
		req.Body = &c.body
		if c.srv.ReadTimeout > 0 {
			c.gc.SetReadDeadlineAhead(rawio.Coarse(start.Add(c.srv.ReadTimeout), c.srv.ReadTimeout))
		}
	} else {
		req.Body = http.NoBody
	}
	if c.srv.WriteTimeout > 0 {
		if by := rawio.Coarse(start.Add(c.srv.WriteTimeout), c.srv.WriteTimeout); !by.Equal(c.writeBy) {
			c.gc.SetWriteDeadline(by)
			c.writeBy = by
		}
	}
	if c.bw == nil {
		c.bw = writers.Get().(*bufio.Writer)
		c.bw.Reset(c.gc)
	}
	c.resp.reset(c, req, start)
	c.watch.reset()
	completed := c.run()
	c.watch.stop()
	if !completed {
		return stepEnd // aborted (§8.7), or the client left while queued: closed as it is
	}
	keep := c.resp.finish()
	if c.body.left > 0 {
		if !keep || c.body.left > maxPostHandlerRead {
			if held {
				return stepLinger
			}
			c.linger()
			return stepEnd
		}
		if _, err := io.Copy(io.Discard, &c.body); err != nil {
			return stepEnd
		}
	}
	if !keep || c.srv.closing.Load() {
		return stepEnd
	}
	if c.r == c.w {
		c.releaseWriter() // an idle connection holds no writer
	}
	return stepNext
}

// run calls the handler. A panic ends the connection at once, the response
// as far as it went: http.ErrAbortHandler is how the exchange makes a
// response visibly incomplete (§8.7); any other is logged, as net/http does.
func (c *conn) run() (completed bool) {
	defer func() {
		if v := recover(); v != nil {
			if v != http.ErrAbortHandler {
				c.srv.Log.Errorf("panic serving %s: %v", c.req.RemoteAddr, v)
			}
			completed = false
		}
	}()
	c.srv.Handler.ServeHTTP(&c.resp, &c.req)
	return true
}

// linger stops writing and reads on, discarding, until the client closes or
// lingerMax passes, so that the client reads the response before the unread
// bytes make the kernel reset the connection (net/http's closeWriteAndWait).
func (c *conn) linger() {
	c.gc.CloseWrite()
	c.gc.SetReadDeadline(time.Now().Add(lingerMax))
	io.Copy(io.Discard, c.gc)
}

// body is a request body framed by Content-Length: the bytes buffered after
// the head first, then the connection's.
type body struct {
	c    *conn
	left int64
}

func (b *body) reset(c *conn, n int64) { *b = body{c: c, left: n} }

func (b *body) Read(p []byte) (int, error) {
	if b.left <= 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	c := b.c
	c.watch.stop()
	var n int
	var err error
	if c.r < c.w {
		n = copy(p, c.buf[c.r:c.w])
		c.r += n
	} else {
		n, err = c.gc.Read(p)
	}
	b.left -= int64(n)
	switch {
	case b.left == 0:
		return n, io.EOF
	case err == io.EOF:
		return n, io.ErrUnexpectedEOF
	}
	return n, err
}

func (b *body) Close() error { return nil }

// handedConn is a connection handed to net/http: its first reads return the
// bytes the front read and left.
type handedConn struct {
	*guard.Conn
	pre []byte
}

func (h *handedConn) Read(p []byte) (int, error) {
	if len(h.pre) > 0 {
		n := copy(p, h.pre)
		h.pre = h.pre[n:]
		return n, nil
	}
	return h.Conn.Read(p)
}

// Guarded is the guarded connection under h (guard.WithConn).
func (h *handedConn) Guarded() *guard.Conn { return h.Conn }
