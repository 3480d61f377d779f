package watchdog

// Hostile clients against a running watchdog, over raw TCP (PROTOCOL.md
// §10.5): what the guard rejects, what net/http still rejects itself, and
// clients that stall or leave.

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/afterburn-dev/afterburn/go/internal/watchdog/config"
	"github.com/afterburn-dev/afterburn/go/internal/watchdog/guard"
	"github.com/afterburn-dev/afterburn/go/internal/watchdog/pool"
	"github.com/afterburn-dev/afterburn/go/internal/watchdog/wire"
)

// rawResponse is one response read off a raw connection.
type rawResponse struct {
	resp *http.Response
	body string
}

// rawAll sends request on a new connection (from a goroutine, ignoring
// write errors: the watchdog may answer and close before it read it all)
// and reads responses until the watchdog closes the connection. It fails
// the test if the connection is still open after waitLimit.
func (h *harness) rawAll(request string) []rawResponse {
	h.t.Helper()
	c, err := net.Dial("tcp", h.addr)
	if err != nil {
		h.t.Fatal(err)
	}
	defer c.Close()
	go io.WriteString(c, request)
	c.SetReadDeadline(time.Now().Add(waitLimit))
	br := bufio.NewReader(c)
	var got []rawResponse
	for {
		resp, err := http.ReadResponse(br, &http.Request{Method: "GET"})
		if err != nil {
			if !closedByPeer(err) {
				h.t.Fatalf("%q: after %d responses: %v; want the connection closed", request, len(got), err)
			}
			return got
		}
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			h.t.Fatalf("%q: reading the body of response %d: %v", request, len(got)+1, err)
		}
		got = append(got, rawResponse{resp, string(b)})
	}
}

// closedByPeer reports the end of a connection the other side closed.
func closedByPeer(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET)
}

// guardHead is the start of a valid request to the test worker.
const guardHead = "GET /x HTTP/1.1\r\nHost: fn\r\n"

// TestGuardRejectsHostileHeads: each head of PROTOCOL.md §10.5 is answered
// by the watchdog itself with the §8.1 body on a closing connection, after
// the responses to the valid requests before it; it is counted, logged once
// with its reason and access-logged without a worker.
func TestGuardRejectsHostileHeads(t *testing.T) {
	t.Parallel()
	h := start(t, func(c *config.Config) { c.MaxHeaderBytes = 1024 })
	ok := "ok GET /x"
	for _, tc := range []struct {
		name    string
		request string
		valid   int // responses "ok GET /x" before the rejection
		typ     wire.ErrorType
		reason  *guard.RejectReason
	}{
		{"RFC 9112 §2.2: bare LF line ends", "GET /x HTTP/1.1\nHost: fn\n\n", 0, wire.ErrBadRequest, guard.ReasonBareLF},
		{"RFC 9112 §2.2: one bare LF", guardHead + "X: a\n\r\n", 0, wire.ErrBadRequest, guard.ReasonBareLF},
		{"RFC 9112 §5.2: obs-fold", guardHead + "X: a\r\n b\r\n\r\n", 0, wire.ErrBadRequest, guard.ReasonObsFold},
		{
			// The smuggled GET would be served by net/http, which lets TE win.
			"RFC 9112 §6.1, llhttp transfer-encoding.md: Content-Length with Transfer-Encoding",
			"POST /x HTTP/1.1\r\nHost: fn\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: fn\r\n\r\n",
			0, wire.ErrBadRequest, guard.ReasonCLAndTE,
		},
		{"RFC 9112 §6.1: Transfer-Encoding in HTTP/1.0", "POST /x HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: fn\r\n\r\n", 0, wire.ErrBadRequest, guard.ReasonTENotHTTP11},
		{"llhttp content-length.md: duplicate Content-Length, equal values", "POST /x HTTP/1.1\r\nHost: fn\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\nz", 0, wire.ErrBadRequest, guard.ReasonCLRepeated},
		{"RFC 9112 §6.3: Content-Length list", "POST /x HTTP/1.1\r\nHost: fn\r\nContent-Length: 1, 1\r\n\r\nz", 0, wire.ErrBadRequest, guard.ReasonCLNotDigits},
		{"HTTP Garden: Content-Length +5", "POST /x HTTP/1.1\r\nHost: fn\r\nContent-Length: +5\r\n\r\nhello", 0, wire.ErrBadRequest, guard.ReasonCLNotDigits},
		{"HTTP Garden: Content-Length -1", "POST /x HTTP/1.1\r\nHost: fn\r\nContent-Length: -1\r\n\r\n", 0, wire.ErrBadRequest, guard.ReasonCLNotDigits},
		{"HTTP Garden: Content-Length ' 5 5'", "POST /x HTTP/1.1\r\nHost: fn\r\nContent-Length:  5 5\r\n\r\nhello", 0, wire.ErrBadRequest, guard.ReasonCLNotDigits},
		{"PROTOCOL.md §7.1: head far past max_header_bytes", guardHead + "X-Big: " + strings.Repeat("b", 64<<10) + "\r\n\r\n", 0, wire.ErrHeadersTooLarge, guard.ReasonHeadTooLarge},
		{"pipelined: valid, then bare LF", guardHead + "\r\n" + "GET /x HTTP/1.1\nHost: fn\n\n", 1, wire.ErrBadRequest, guard.ReasonBareLF},
		{"pipelined: two valid, then Content-Length with Transfer-Encoding", guardHead + "\r\n" + guardHead + "\r\n" + "POST /x HTTP/1.1\r\nHost: fn\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n0\r\n\r\n", 2, wire.ErrBadRequest, guard.ReasonCLAndTE},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h.t = t
			before := counter(t, h.wd.m.Rejected, string(tc.typ))
			got := h.rawAll(tc.request)
			if len(got) != tc.valid+1 {
				t.Fatalf("got %d responses; want %d then the rejection", len(got), tc.valid)
			}
			for _, r := range got[:tc.valid] {
				wantBody(t, r.resp, r.body, 200, ok)
			}
			last := got[tc.valid]
			wantError(t, last.resp, last.body, tc.typ.Status(), tc.typ)
			if !last.resp.Close {
				t.Errorf("rejection without Connection: close")
			}
			if after := counter(t, h.wd.m.Rejected, string(tc.typ)); after != before+1 {
				t.Errorf(`requests_rejected_total{type=%q} went from %v to %v; want +1`, tc.typ, before, after)
			}
			id := last.resp.Header.Get("AfterBurn-Request-Id")
			line := h.logs.waitContains(t, "id="+id)
			if !strings.Contains(line, "status="+strconv.Itoa(tc.typ.Status())) || !strings.HasSuffix(line, " worker=-") {
				t.Errorf("access log %q; want status %d and worker=-", line, tc.typ.Status())
			}
			if line := h.logs.waitContains(t, "request "+id+" from"); !strings.HasSuffix(line, tc.reason.Text) {
				t.Errorf("log %q; want the reason %q", line, tc.reason.Text)
			}
			if n := strings.Count(h.logs.String(), "request "+id+" from"); n != 1 {
				t.Errorf("the rejection is logged %d times; want once", n)
			}
		})
	}
	h.t = t
	resp, body := h.Get("/after")
	wantBody(t, resp, body, 200, "ok GET /after")
	h.logs.waitContains(t, "path=/after ")
	if strings.Contains(h.logs.String(), "/smuggled") {
		t.Errorf("a smuggled request reached the watchdog's handler:\n%s", h.logs.String())
	}
}

// TestGuardLeavesToNetHTTP: what net/http already rejects well it still
// rejects (PROTOCOL.md §8.1, plain-text errors; §10.5): 400, or 501 for a
// transfer coding other than chunked, on a closing connection, and no
// worker sees the request. The 413 is the watchdog's own (§7.2).
func TestGuardLeavesToNetHTTP(t *testing.T) {
	t.Parallel()
	h := start(t, func(c *config.Config) { c.MaxRequestBody = 1000 })
	for _, tc := range []struct {
		name    string
		request string
		status  int
		typ     wire.ErrorType // "" for net/http's plain-text answer
	}{
		{"RFC 9110 §5.5: NUL in a field value", guardHead + "X: a\x00b\r\n\r\n", 400, ""},
		{"RFC 9110 §5.5: CR in a field value", guardHead + "X: a\rb\r\n\r\n", 400, ""},
		{"RFC 9112 §3.2: no Host", "GET /x HTTP/1.1\r\nX: y\r\n\r\n", 400, ""},
		{"RFC 9112 §3.2: two Host lines", guardHead + "Host: other\r\n\r\n", 400, ""},
		{"RFC 9112 §6.1: Transfer-Encoding gzip, chunked", "POST /x HTTP/1.1\r\nHost: fn\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n", 501, ""},
		{"llhttp transfer-encoding.md: Ignoring pigeons", "PUT /x HTTP/1.1\r\nHost: fn\r\nTransfer-Encoding: pigeons\r\n\r\n", 501, ""},
		{"RFC 9112 §6.1: two Transfer-Encoding lines", "POST /x HTTP/1.1\r\nHost: fn\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 501, ""},
		{"PROTOCOL.md §7.2: oversized body", "POST /x HTTP/1.1\r\nHost: fn\r\nContent-Length: 1001\r\n\r\n" + strings.Repeat("z", 1001), 413, wire.ErrBodyTooLarge},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h.t = t
			got := h.rawAll(tc.request + guardHead + "\r\n")
			if len(got) != 1 {
				t.Fatalf("got %d responses; want 1 then close", len(got))
			}
			r := got[0]
			if tc.typ != "" {
				wantError(t, r.resp, r.body, tc.status, tc.typ)
			} else if r.resp.StatusCode != tc.status {
				t.Fatalf("got %d %q; want %d", r.resp.StatusCode, r.body, tc.status)
			}
			if !r.resp.Close {
				t.Errorf("got a connection left open; want Connection: close")
			}
		})
	}
	h.t = t
	h.logs.waitContains(t, "path=/x status=413")
	if n := strings.Count(h.logs.String(), "path=/x "); n != 1 {
		t.Errorf("%d access-log lines for /x; want only the 413:\n%s", n, h.logs.String())
	}
	if got := counter(t, h.wd.m.Restarts, "request_aborted"); got != 0 {
		t.Errorf(`restarts_total{reason="request_aborted"} = %v; want 0`, got)
	}
}

// TestGuardRejectsBadChunks: a chunked body with bad framing is found
// while a worker already reads it: it is answered 400 as a body that cannot
// be completed (PROTOCOL.md §6.4, §10.5), the worker is replaced and the
// next request is clean.
func TestGuardRejectsBadChunks(t *testing.T) {
	t.Parallel()
	h := start(t, nil)
	defer func() { h.t = t }() // subtests borrow the harness
	head := "POST /headers HTTP/1.1\r\nHost: fn\r\nTransfer-Encoding: chunked\r\n\r\n"
	for i, tc := range []struct {
		name   string
		body   string
		reason *guard.RejectReason
	}{
		{"RFC 9112 §7.1: non-hex chunk size", "zz\r\nhello\r\n0\r\n\r\n", guard.ReasonChunkSize},
		{"HTTP Garden: chunk size 0x5", "0x5\r\nhello\r\n0\r\n\r\n", guard.ReasonChunkSize},
		{"HTTP Garden: chunk size +5", "+5\r\nhello\r\n0\r\n\r\n", guard.ReasonChunkSize},
		{"llhttp transfer-encoding.md: no semicolon before chunk extensions", "2 erfrferferf\r\naa\r\n0\r\n\r\n", guard.ReasonChunkSize},
		{"PROTOCOL.md §4.3 rule 9: 17 hex digits", "00000000000000005\r\nhello\r\n0\r\n\r\n", guard.ReasonChunkSize},
		{"HTTP Garden: chunk data not followed by CRLF", "5\r\nhelloXX\r\n0\r\n\r\n", guard.ReasonChunkCRLF},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h.t = t
			got := h.rawAll(head + tc.body + guardHead + "\r\n")
			if len(got) != 1 {
				t.Fatalf("got %d responses; want 1 then close", len(got))
			}
			wantError(t, got[0].resp, got[0].body, 400, wire.ErrBadRequest)
			h.logs.waitContains(t, tc.reason.Text)
			h.waitState("the worker replaced", func(st pool.Status, ready bool) bool { return ready })
			if n := counter(t, h.wd.m.Restarts, "request_aborted"); n != float64(i+1) {
				t.Errorf(`restarts_total{reason="request_aborted"} = %v; want %d`, n, i+1)
			}
			resp, body := h.Get("/x")
			wantBody(t, resp, body, 200, "ok GET /x")
		})
	}
}

// TestGuardSlowClients: read_timeout ends a head or a body sent a byte at a
// time (slowloris): a head with 408 request_timeout (§10.5), on a new
// connection, on a kept-alive one and pipelined behind a running request; a
// connection that sent nothing without a response. These are timing tests
// because read_timeout is what is under test; the margins are wide.
func TestGuardSlowClients(t *testing.T) {
	t.Parallel()
	const readTimeout = 300 * time.Millisecond
	h := start(t, func(c *config.Config) { c.ReadTimeout = readTimeout })
	defer func() { h.t = t }() // subtests borrow the harness
	// drip sends s and then an endless field value, a byte every 20 ms,
	// until the watchdog closes the connection.
	drip := func(c net.Conn, s string) {
		if _, err := io.WriteString(c, s); err != nil {
			return
		}
		for {
			if _, err := c.Write([]byte{'a'}); err != nil {
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	}

	// want408 reads a 408 request_timeout (§10.5) on a closing connection,
	// read_timeout or more after since, and checks that the slow head
	// reached no worker and was counted and logged.
	want408 := func(t *testing.T, br *bufio.Reader, since time.Time, rejected float64) {
		t.Helper()
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("reading the response: %v; want 408", err)
		}
		body, _ := io.ReadAll(resp.Body)
		wantError(t, resp, string(body), 408, wire.ErrRequestTimeout)
		if took := time.Since(since); took < readTimeout*9/10 {
			t.Errorf("answered after %v; want read_timeout (%v)", took, readTimeout)
		}
		if !resp.Close {
			t.Errorf("the 408 has no Connection: close")
		}
		if n, err := br.Read(make([]byte, 1)); n != 0 || !closedByPeer(err) {
			t.Errorf("after the 408: read %d bytes, %v; want the connection closed", n, err)
		}
		h.logs.waitContains(t, "path=/slowloris status=408")
		if got := counter(t, h.wd.m.Rejected, string(wire.ErrRequestTimeout)); got != rejected {
			t.Errorf(`requests_rejected_total{type="request_timeout"} = %v; want %v`, got, rejected)
		}
		resp, b := h.Get("/x")
		wantBody(t, resp, b, 200, "ok GET /x")
		for _, l := range strings.Split(h.logs.String(), "\n") {
			if strings.Contains(l, "path=/slowloris") && strings.Contains(l, "worker=w") {
				t.Errorf("the slow head reached a worker: %s", l)
			}
		}
	}
	dial := func(t *testing.T) (net.Conn, *bufio.Reader) {
		c, err := net.Dial("tcp", h.addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		c.SetReadDeadline(time.Now().Add(waitLimit))
		return c, bufio.NewReader(c)
	}

	t.Run("slowloris head: 408 at read_timeout, no worker used", func(t *testing.T) {
		h.t = t
		c, br := dial(t)
		started := time.Now()
		go drip(c, "GET /slowloris HTTP/1.1\r\nHost: fn\r\nX: ")
		want408(t, br, started, 1)
	})

	t.Run("slowloris head on a kept-alive connection: 408 at read_timeout, not the idle timeout", func(t *testing.T) {
		h.t = t
		c, br := dial(t)
		io.WriteString(c, "GET /first HTTP/1.1\r\nHost: fn\r\n\r\n")
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		io.ReadAll(resp.Body)
		started := time.Now()
		go drip(c, "GET /slowloris HTTP/1.1\r\nHost: fn\r\nX: ")
		want408(t, br, started, 2)
	})

	t.Run("slowloris head pipelined behind a running request: its answer, then 408", func(t *testing.T) {
		h.t = t
		c, br := dial(t)
		started := time.Now()
		sleep := fmt.Sprintf("/sleep?ms=%d", 2*readTimeout.Milliseconds())
		go drip(c, "GET "+sleep+" HTTP/1.1\r\nHost: fn\r\n\r\nGET /slowloris HTTP/1.1\r\nHost: fn\r\nX: ")
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		wantBody(t, resp, string(body), 200, "slept "+strconv.FormatInt(2*readTimeout.Milliseconds(), 10))
		want408(t, br, started, 3)
	})

	t.Run("nothing sent: closed at read_timeout without a response", func(t *testing.T) {
		h.t = t
		_, br := dial(t)
		started := time.Now()
		if n, err := br.Read(make([]byte, 1)); n != 0 || !closedByPeer(err) {
			t.Fatalf("got %d bytes, %v; want the connection closed without a response", n, err)
		}
		if took := time.Since(started); took < readTimeout*9/10 {
			t.Errorf("closed after %v; want read_timeout (%v)", took, readTimeout)
		}
		if got := counter(t, h.wd.m.Rejected, string(wire.ErrRequestTimeout)); got != 3 {
			t.Errorf(`requests_rejected_total{type="request_timeout"} = %v; want 3 (no new one)`, got)
		}
	})

	t.Run("slowloris body: 400 at read_timeout, worker replaced (§6.4)", func(t *testing.T) {
		h.t = t
		c, err := net.Dial("tcp", h.addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		go drip(c, "POST /headers HTTP/1.1\r\nHost: fn\r\nContent-Length: 100000\r\n\r\n")
		c.SetReadDeadline(time.Now().Add(waitLimit))
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatalf("reading the response: %v", err)
		}
		body, _ := io.ReadAll(resp.Body)
		wantError(t, resp, string(body), 400, wire.ErrBadRequest)
		h.waitState("the worker replaced", func(st pool.Status, ready bool) bool { return ready })
		if n := counter(t, h.wd.m.Restarts, "request_aborted"); n != 1 {
			t.Errorf(`restarts_total{reason="request_aborted"} = %v; want 1`, n)
		}
		resp2, body2 := h.Get("/x")
		wantBody(t, resp2, body2, 200, "ok GET /x")
	})
}

// TestGuardClientGone: a client that leaves in the middle of a head costs
// nothing, in the middle of a chunk-size line costs the worker it already
// had (§6.4); either way the next request is clean. (Leaving mid-body and
// mid-response: TestClientGoneMidBody, TestClientGoneMidResponse.)
func TestGuardClientGone(t *testing.T) {
	t.Parallel()
	h := start(t, nil)
	defer func() { h.t = t }() // subtests borrow the harness
	for _, tc := range []struct {
		name     string
		sent     string
		restarts float64 // request_aborted restarts so far
	}{
		{"mid-head", "POST /headers HTTP/1.1\r\nHost: fn\r\nContent-Le", 0},
		{"mid-chunk-size line", "POST /headers HTTP/1.1\r\nHost: fn\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n1", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h.t = t
			c, err := net.Dial("tcp", h.addr)
			if err != nil {
				t.Fatal(err)
			}
			io.WriteString(c, tc.sent)
			if tc.restarts > 0 {
				h.waitState("busy", func(st pool.Status, ready bool) bool { return st.Busy == 1 })
			}
			c.Close()
			if tc.restarts > 0 {
				h.logs.waitContains(t, "could not be completed")
			}
			resp, body := h.Get("/x")
			wantBody(t, resp, body, 200, "ok GET /x")
			if n := counter(t, h.wd.m.Restarts, "request_aborted"); n != tc.restarts {
				t.Errorf(`restarts_total{reason="request_aborted"} = %v; want %v`, n, tc.restarts)
			}
		})
	}
}
