// Package front is the watchdog's own HTTP/1.1 server for the common case
// (PROTOCOL.md §10.6): it reads the client's connection itself, takes each
// head the guard (§10.5) released that it reads exactly as net/http would,
// and hands the connection, with the bytes it read, to net/http for
// everything else. One goroutine per connection reads the head, runs the
// handler (the watchdog's, the same one net/http calls) and writes the
// response in as few writes as the exchange allows; there is no background
// read, no request context per request, and no bufio reader of net/http's.
//
// Layer 3 of the watchdog (doc.go): it knows the guard, the log and the
// wire syntax, not the pool or the exchange, which reach it only as the
// http.Handler it calls.
package front

import (
	"context"
	"errors"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/afterburn-dev/afterburn/go/internal/watchdog/guard"
	"github.com/afterburn-dev/afterburn/go/internal/watchdog/obs"
)

// Server serves the connections of a guarded listener.
type Server struct {
	Handler http.Handler
	Guard   *guard.Guard
	Log     *obs.Logger
	// Handoff is where a connection goes when the front leaves a request to
	// net/http: net/http serves it from there, the connection included.
	Handoff *Handoff
	// Timeouts as net/http's (§10.2): ReadTimeout bounds a head from its
	// first byte (the guard's) and the request from its head; WriteTimeout a
	// response from the end of its head; IdleTimeout the wait for a next
	// request.
	ReadTimeout, WriteTimeout, IdleTimeout time.Duration
	// BodyMax is the largest Content-Length the front takes; a larger body
	// goes to net/http, whose path splices it (exchange/hijack.go).
	BodyMax int64

	closing atomic.Bool
	mu      sync.Mutex
	ln      net.Listener
	conns   map[*conn]struct{}
	done    chan struct{} // closed when the last connection ends after Shutdown
}

// Serve accepts connections on ln, a guard.Listener, until it is closed.
func (s *Server) Serve(ln net.Listener) error {
	s.mu.Lock()
	s.ln = ln
	if s.conns == nil {
		s.conns = map[*conn]struct{}{}
	}
	s.mu.Unlock()
	var backoff time.Duration
	for {
		nc, err := ln.Accept()
		if err != nil {
			if s.closing.Load() {
				return http.ErrServerClosed
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() || errors.Is(err, errTooManyFiles) {
				// As net/http does: out of descriptors, wait and try again.
				backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
				s.Log.Warnf("accept error: %v; retrying in %v", err, backoff)
				time.Sleep(backoff)
				continue
			}
			return err
		}
		backoff = 0
		gc, ok := nc.(*guard.Conn)
		if !ok {
			nc.Close()
			return errors.New("front: the listener is not guarded")
		}
		c := newConn(s, gc)
		if !s.track(c, true) {
			gc.Close()
			continue
		}
		go c.serve()
	}
}

// track adds c to the connections, or removes it; adding fails once the
// server is shutting down.
func (s *Server) track(c *conn, add bool) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if add {
		if s.closing.Load() {
			return false
		}
		s.conns[c] = struct{}{}
		return true
	}
	delete(s.conns, c)
	if len(s.conns) == 0 && s.done != nil {
		close(s.done)
		s.done = nil
	}
	return true
}

// Shutdown stops accepting, closes idle connections, and waits until every
// other connection has finished its exchange and closed (each response
// written from now on says Connection: close), or ctx ends.
func (s *Server) Shutdown(ctx context.Context) error {
	s.closing.Store(true)
	s.mu.Lock()
	if s.ln != nil {
		s.ln.Close()
	}
	var done chan struct{}
	if len(s.conns) > 0 {
		done = make(chan struct{})
		s.done = done
	}
	for c := range s.conns {
		c.closeIfIdle()
	}
	s.mu.Unlock()
	if done == nil {
		return nil
	}
	// A connection that turns idle after this look is closed by its own
	// goroutine, which sees closing before it waits again.
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Close closes every connection at once.
func (s *Server) Close() error {
	s.closing.Store(true)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ln != nil {
		s.ln.Close()
	}
	for c := range s.conns {
		c.closeNow()
	}
	return nil
}

// Handoff is a net.Listener whose connections come from Give: those the
// front hands to net/http, and those a spliced exchange gives back
// (exchange/hijack.go), for net/http to serve from their next request on.
type Handoff struct {
	addr   net.Addr
	conns  chan net.Conn
	closed chan struct{}
	once   sync.Once
}

func NewHandoff(addr net.Addr) *Handoff {
	return &Handoff{addr: addr, conns: make(chan net.Conn), closed: make(chan struct{})}
}

func (l *Handoff) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.closed:
		return nil, net.ErrClosed
	}
}

func (l *Handoff) Close() error {
	l.once.Do(func() { close(l.closed) })
	return nil
}

func (l *Handoff) Addr() net.Addr { return l.addr }

// Give hands c to net/http, or closes it once the server takes no more.
func (l *Handoff) Give(c net.Conn) {
	select {
	case l.conns <- c:
	case <-l.closed:
		c.Close()
	}
}
