package watchdog

import (
	"bytes"
	"net"
	"runtime"
	"strconv"
	"testing"
	"time"
)

// TestFrontRequestsAllocateNothing: a keep-alive client's plain requests, served by the
// front (§10.6) through a worker, cost the watchdog no allocation per request (issue 29):
// the request's storage is its connection's (newFunctionRequest), the worker's head is
// read in place (wire.RespHead). The watchdog runs in this process; the client below
// allocates nothing per request either, so the process's mallocs over many requests are
// the watchdog's. A few allocations that are not per request (timers, the runtime's own)
// may fall inside the count, hence a bound well under one per request.
func TestFrontRequestsAllocateNothing(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	h := start(t, nil)
	c, err := net.Dial("tcp", h.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	req := []byte("GET /x HTTP/1.1\r\nHost: fn\r\n\r\n")
	want := []byte("ok GET /x")
	buf := make([]byte, 4096)
	exchange := func() {
		if _, err := c.Write(req); err != nil {
			t.Fatal(err)
		}
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		n := 0
		for {
			m, err := c.Read(buf[n:])
			n += m
			if err != nil {
				t.Fatalf("after %q: %v", buf[:n], err)
			}
			// The head says how long the body is; read until the response is whole.
			end := bytes.Index(buf[:n], []byte("\r\n\r\n"))
			if end < 0 {
				continue
			}
			i := bytes.Index(buf[:end], []byte("\r\nContent-Length: "))
			if i < 0 {
				t.Fatalf("no Content-Length in %q", buf[:n])
			}
			j := i + len("\r\nContent-Length: ")
			length := 0
			for ; buf[j] >= '0' && buf[j] <= '9'; j++ {
				length = length*10 + int(buf[j]-'0')
			}
			if n < end+4+length {
				continue
			}
			if !bytes.HasPrefix(buf, []byte("HTTP/1.1 200 ")) || !bytes.Equal(buf[end+4:n], want) {
				t.Fatalf("response %q; want a 200 with body %q", buf[:n], want)
			}
			return
		}
	}
	for range 200 { // warm: buffers, pools, the worker's lane
		exchange()
	}
	const requests = 2000
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for range requests {
		exchange()
	}
	runtime.ReadMemStats(&after)
	per := float64(after.Mallocs-before.Mallocs) / requests
	t.Logf("%.3f allocations per request over %d", per, requests)
	if per > 0.1 {
		t.Errorf("%.3f allocations per request (%s over %d requests); want none", per,
			strconv.FormatUint(after.Mallocs-before.Mallocs, 10), requests)
	}
}
