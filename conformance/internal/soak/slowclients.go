package soak

import (
	"context"
	"fmt"
	"net"
	"strings"
	"sync"
	"time"
)

// Slow clients (issue 17, PROTOCOL.md §6.6 and response buffering): clients
// that send a body at 1 KB/s, and clients that ask for a 50 MB response and
// never read it, run beside the soak's ordinary load. A watchdog that
// buffers absorbs them: the ordinary requests are answered as before and no
// worker is killed for their sake.

const (
	trickleBodyBytes = 64 << 10 // announced; at 1 KB/s it would take over a minute
	trickleChunk     = 100      // bytes every 100 ms: 1 KB/s
	unreadResponse   = 50 << 20 // bytes asked for and never read
	// slowClientMemory (MiB) is what a watchdog may hold in memory for one
	// slow client: a request buffer (256 KiB) and a response buffer (1 MiB),
	// twice over because Go's collector lets the heap reach twice what is
	// live before it collects. The soak's RSS check allows it on top of its
	// 10 %.
	slowClientMemory = 2.5
)

// slowClients starts n trickling and n non-reading clients and returns a
// function that closes them all and waits for their goroutines.
func (s *soaker) slowClients(ctx context.Context, n int) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	addr := strings.TrimPrefix(s.wd.URL(""), "http://")
	for i := range n {
		wg.Add(2)
		go func() {
			defer wg.Done()
			s.trickle(ctx, addr, i)
		}()
		go func() {
			defer wg.Done()
			s.neverRead(ctx, addr, i)
		}()
	}
	return func() {
		cancel()
		wg.Wait()
	}
}

// trickle sends a POST whose body arrives at 1 KB/s, for as long as ctx lasts.
func (s *soaker) trickle(ctx context.Context, addr string, i int) {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		s.problem(false, fmt.Sprintf("slow client %d: %v", i, err))
		return
	}
	defer c.Close()
	fmt.Fprintf(c, "POST /sha256 HTTP/1.1\r\nHost: soak\r\nX-Request-Id: trickle-%d\r\nContent-Length: %d\r\n\r\n", i, trickleBodyBytes)
	chunk := strings.Repeat("t", trickleChunk)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for sent := 0; sent+trickleChunk < trickleBodyBytes; sent += trickleChunk {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if _, err := c.Write([]byte(chunk)); err != nil {
			return // the watchdog may cut it at read_timeout: that is its right
		}
	}
}

// neverRead asks for a large response and reads none of it until ctx ends.
func (s *soaker) neverRead(ctx context.Context, addr string, i int) {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		s.problem(false, fmt.Sprintf("non-reading client %d: %v", i, err))
		return
	}
	defer c.Close()
	if tc, ok := c.(*net.TCPConn); ok {
		tc.SetReadBuffer(4096)
	}
	fmt.Fprintf(c, "GET /large?size=%d HTTP/1.1\r\nHost: soak\r\nX-Request-Id: unread-%d\r\n\r\n", unreadResponse, i)
	<-ctx.Done()
}
