package e2e

// ---- hostile-clients group: the watchdog's own rejections (§10.5), with
// -workers 1 -max_header_bytes 1024 -read_timeout 1s.

import (
	"errors"
	"io"
	"os"
	"regexp"
	"strings"
	"time"
)

// hostileReadTimeout is the group's -read_timeout.
const hostileReadTimeout = time.Second

// WantClosed requires the watchdog to close the connection with nothing
// more to read.
func (r *Raw) WantClosed() {
	n, err := r.br.Read(make([]byte, 1))
	if n > 0 || !closed(err) {
		r.t.Fatalf("%s: after the rejection: read %d bytes, %v; want the connection closed (§10.5)", r.t.lastReq(), n, err)
	}
}

// closed reports a read error that means the peer closed the connection.
func closed(err error) bool {
	return errors.Is(err, io.EOF) || (err != nil && !errors.Is(err, os.ErrDeadlineExceeded))
}

// rejectedHead sends request on a new connection after the valid requests
// before it (each a GET /echo) and requires: an echo for each valid one,
// then the §8.1 error of typ with Connection: close, then the connection
// closed, and the rejection counted in afterburn_requests_rejected_total.
func rejectedHead(t *T, valid int, request string, status int, typ string) {
	before := t.Metric("afterburn_requests_rejected_total", "type", typ)
	rc := t.Dial()
	rc.SendLenient(strings.Repeat("GET /echo HTTP/1.1\r\nHost: fn\r\n\r\n", valid) + request)
	for i := 0; i < valid; i++ {
		t.Echo(rc.Read("GET"))
	}
	r := rc.Read("GET")
	t.WatchdogError(r, status, typ)
	if !r.Close {
		t.Fatalf("%s: the rejection has no Connection: close (§10.5)\ngot response: %s", t.lastReq(), r)
	}
	if r.Header.Get("AfterBurn-Request-Id") == "" {
		t.Fatalf("%s: the rejection has no AfterBurn-Request-Id (§10.5)\ngot response: %s", t.lastReq(), r)
	}
	rc.WantClosed()
	t.WaitMetric(before+1, "afterburn_requests_rejected_total", "type", typ)
}

func guardBareLF(t *T) {
	rejectedHead(t, 0, "GET /echo HTTP/1.1\nHost: fn\n\n", 400, "bad_request")
	rejectedHead(t, 0, "GET /echo HTTP/1.1\r\nHost: fn\r\nX: a\n\r\n", 400, "bad_request")
}

func guardObsFold(t *T) {
	rejectedHead(t, 0, "GET /echo HTTP/1.1\r\nHost: fn\r\nX: a\r\n b\r\n\r\n", 400, "bad_request")
}

func guardCLAndTE(t *T) {
	// Go's net/http alone lets Transfer-Encoding win and serves the
	// smuggled GET on the same connection; only one response may come.
	smuggled := "0\r\n\r\nGET /echo/smuggled HTTP/1.1\r\nHost: fn\r\n\r\n"
	rejectedHead(t, 0, "POST /echo HTTP/1.1\r\nHost: fn\r\nContent-Length: 42\r\nTransfer-Encoding: chunked\r\n\r\n"+smuggled, 400, "bad_request")
	rejectedHead(t, 0, "POST /echo HTTP/1.1\r\nHost: fn\r\nTransfer-Encoding: chunked\r\nContent-Length: 42\r\n\r\n"+smuggled, 400, "bad_request")
}

func guardTEHTTP10(t *T) {
	rejectedHead(t, 0, "POST /echo HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nGET /echo/smuggled HTTP/1.1\r\nHost: fn\r\n\r\n", 400, "bad_request")
}

func guardContentLength(t *T) {
	for _, v := range []string{"5\r\nContent-Length: 5", "5, 5", "+5", "-1", " 5 5", "0x5", "99999999999999999999"} {
		rejectedHead(t, 0, "POST /echo HTTP/1.1\r\nHost: fn\r\nContent-Length: "+v+"\r\n\r\nhello", 400, "bad_request")
	}
}

func guardPipelined(t *T) {
	rejectedHead(t, 2, "GET /echo HTTP/1.1\r\nHost: fn\r\nX: a\r\n\tb\r\n\r\n", 400, "bad_request")
}

func guardHeadFarTooLarge(t *T) {
	// 64 KiB against -max_header_bytes 1024: past the bound of §10.5.
	rejectedHead(t, 0, "GET /echo HTTP/1.1\r\nHost: fn\r\nX-Big: "+strings.Repeat("a", 64<<10)+"\r\n\r\n", 431, "headers_too_large")
}

func guardBadChunk(t *T) {
	t.WaitIdle(1)
	// "5 " passes Go's own chunked reader, which trims trailing whitespace;
	// RFC 9112 §7.1 allows whitespace only before ";".
	for _, size := range []string{"zz", "0x5", "5 5", "5 ", "00000000000000005"} {
		before := t.Restarts("request_aborted")
		rc := t.Dial()
		rc.SendLenient("POST /echo HTTP/1.1\r\nHost: fn\r\nTransfer-Encoding: chunked\r\n\r\n" + size + "\r\nhello\r\n0\r\n\r\n")
		t.WatchdogError(rc.Read("POST"), 400, "bad_request")
		rc.WantClosed()
		t.WaitMetric(before+1, "afterburn_worker_restarts_total", "reason", "request_aborted")
		t.WaitIdle(1)
		echoesOwnIDs(t, 2)
	}
}

// guardSlowlorisHead: §10.5 — a head sent a byte every 50 ms is answered 408
// request_timeout read_timeout after its first byte, on a new connection and
// on one kept alive (where the wait for a next request is otherwise an idle
// timeout), counted and access-logged, and reaches no handler.
func guardSlowlorisHead(t *T) {
	for _, keptAlive := range []bool{false, true} {
		from := t.WD.Log.Len()
		before := t.Metric("afterburn_requests_rejected_total", "type", "request_timeout")
		rc := t.Dial()
		what := "on a new connection"
		if keptAlive {
			what = "on a kept-alive connection"
			rc.Send("GET /echo HTTP/1.1\r\nHost: fn\r\n\r\n")
			t.Echo(rc.Read("GET"))
		}
		rc.Send("GET /echo/slowloris HTTP/1.1\r\nHost: fn\r\nX: ")
		start := time.Now()
		stop := make(chan struct{})
		go func() {
			for {
				select {
				case <-stop:
					return
				case <-time.After(50 * time.Millisecond):
				}
				if _, err := rc.c.Write([]byte("a")); err != nil {
					return
				}
			}
		}()
		r := rc.Read("GET")
		close(stop)
		took := time.Since(start)
		t.WatchdogError(r, 408, "request_timeout")
		if !r.Close {
			t.Fatalf("%s %s: the 408 has no Connection: close (§10.5)\ngot response: %s", t.lastReq(), what, r)
		}
		if took < hostileReadTimeout*9/10 || took > hostileReadTimeout*3 {
			t.Fatalf("a head sent a byte every 50 ms %s was answered after %v; want read_timeout (%v) after its first byte (§10.5)", what, took, hostileReadTimeout)
		}
		rc.WantClosed()
		t.WaitMetric(before+1, "afterburn_requests_rejected_total", "type", "request_timeout")
		// §9.5: the rejection's access-log line names no worker.
		t.LogWait(from, regexp.MustCompile(`path=/echo/slowloris status=408 .*worker=-`))
		if reached.MatchString(t.WD.Log.Since(from)) {
			t.Fatalf("the unfinished head %s reached a worker; watchdog log:\n%s", what, t.WD.Log.Since(from))
		}
	}
	echoesOwnIDs(t, 2)
}

// reached is an access-log line of the slow head served by a worker.
var reached = regexp.MustCompile(`path=/echo/slowloris .*worker=w`)

// guardIdleClosed: §10.5 — a connection on which nothing is sent is closed at
// read_timeout without a response, and no rejection is counted.
func guardIdleClosed(t *T) {
	before := t.Metric("afterburn_requests_rejected_total", "type", "request_timeout")
	rc := t.Dial()
	start := time.Now()
	t.setLast("a connection that sends nothing")
	rc.WantClosed()
	if took := time.Since(start); took < hostileReadTimeout*9/10 {
		t.Fatalf("%s was closed after %v; want read_timeout (%v)", t.lastReq(), took, hostileReadTimeout)
	}
	if got := t.Metric("afterburn_requests_rejected_total", "type", "request_timeout"); got != before {
		t.Fatalf("%s: afterburn_requests_rejected_total{type=\"request_timeout\"} went from %v to %v; want no rejection counted: no request was begun", t.lastReq(), before, got)
	}
}

func serverRejectsFields(t *T) {
	for _, req := range []string{
		"GET /echo HTTP/1.1\r\nHost: fn\r\nX: a\x00b\r\n\r\n",
		"GET /echo HTTP/1.1\r\nHost: fn\r\nX: a\rb\r\n\r\n",
		"GET /echo HTTP/1.1\r\nX: y\r\n\r\n",
		"GET /echo HTTP/1.1\r\nHost: fn\r\nHost: other\r\n\r\n",
	} {
		rc := t.Dial()
		rc.SendLenient(req)
		if r := rc.Read("GET"); r.StatusCode != 400 {
			t.Fatalf("%s %q: got %s; want 400 (§8.1)", t.lastReq(), req, r)
		}
		rc.WantClosed()
	}
	rc := t.Dial()
	rc.SendLenient("POST /echo HTTP/1.1\r\nHost: fn\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n")
	if r := rc.Read("POST"); r.StatusCode != 501 {
		t.Fatalf("%s with Transfer-Encoding: gzip, chunked: got %s; want 501 (§8.2)", t.lastReq(), r)
	}
	rc.WantClosed()
}
