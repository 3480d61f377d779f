package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/afterburn-dev/afterburn/conformance/internal/check"
	"github.com/afterburn-dev/afterburn/conformance/internal/expect"
)

// T is what a check works with, modelled on testing.T: Fatalf ends the
// check. Only the check's own goroutine may call Fatalf; goroutines hand
// their results back over channels.
type T struct {
	ctx      context.Context
	cfg      *Config
	WD       *Watchdog // the group's watchdog; nil in a manual group until StartWatchdog
	client   *http.Client
	mu       sync.Mutex
	last     string // the last request sent, for the failure report
	cleanups []func()
	ownLanes int // -lanes of the check's own watchdog (the lanes group), 0 for the layer's
}

// setLast records the request being sent; requests may be sent from
// several goroutines.
func (t *T) setLast(s string) {
	t.mu.Lock()
	t.last = s
	t.mu.Unlock()
}

// lastReq is the last request sent.
func (t *T) lastReq() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.last
}

// failure carries a Fatalf message through panic to the runner.
type failure struct{ msg string }

// Fatalf ends the check with a failure.
func (t *T) Fatalf(format string, args ...any) {
	panic(failure{fmt.Sprintf(format, args...)})
}

// Skipf ends the check as skipped.
func (t *T) Skipf(format string, args ...any) {
	panic(&check.SkipError{Reason: fmt.Sprintf(format, args...)})
}

// Context is the check's context; it ends at the check's timeout.
func (t *T) Context() context.Context { return t.ctx }

// Cleanup registers f to run when the check ends.
func (t *T) Cleanup(f func()) { t.cleanups = append(t.cleanups, f) }

// StartWatchdog starts a watchdog of the check's own (manual groups); it
// is stopped when the check ends. With ready it also waits for /_/ready.
func (t *T) StartWatchdog(flags []string, env map[string]string, ready bool) *Watchdog {
	w, err := StartWatchdog(t.ctx, t.cfg.Watchdog, t.cfg.Function, t.cfg.flags(flags), env)
	if err != nil {
		t.Fatalf("%v", err)
	}
	t.WD = w
	t.Cleanup(w.Stop)
	if ready {
		if err := w.WaitReady(t.ctx, 0); err != nil {
			t.Fatalf("%v", err)
		}
	}
	return w
}

// StartWatchdogInheriting is StartWatchdog with descriptors the watchdog
// inherits from fd 3 on (§2.2); it waits for /_/ready.
func (t *T) StartWatchdogInheriting(flags []string, env map[string]string, files []*os.File) *Watchdog {
	w, err := startWatchdog(t.ctx, t.cfg.Watchdog, t.cfg.Function, t.cfg.flags(flags), env, files)
	if err != nil {
		t.Fatalf("%v", err)
	}
	t.WD = w
	t.Cleanup(w.Stop)
	if err := w.WaitReady(t.ctx, 0); err != nil {
		t.Fatalf("%v", err)
	}
	return w
}

// Resp is a response with its body read.
type Resp struct {
	*http.Response
	Body    []byte
	BodyErr error // non-nil when reading the body failed (cut short)
	Elapsed time.Duration
}

func (r *Resp) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d", r.StatusCode)
	for _, h := range expect.HeaderFields(r.Header) {
		fmt.Fprintf(&b, " | %s: %s", h[0], h[1])
	}
	if len(r.TransferEncoding) > 0 {
		b.WriteString(" | (chunked)")
	}
	body := r.Body
	suffix := ""
	if len(body) > 300 {
		body, suffix = body[:300], fmt.Sprintf("… (%d bytes)", len(r.Body))
	}
	fmt.Fprintf(&b, " | body %q%s", body, suffix)
	if r.BodyErr != nil {
		fmt.Fprintf(&b, " (body error: %v)", r.BodyErr)
	}
	return b.String()
}

// Expect converts r for the vector matchers.
func (r *Resp) Expect() *expect.Response { return expect.FromHTTP(r.Response, r.Body, r.BodyErr) }

// header builds an http.Header from "Name: value" strings.
func header(kv ...string) http.Header {
	h := http.Header{}
	for _, s := range kv {
		k, v, _ := strings.Cut(s, ":")
		h.Add(strings.TrimSpace(k), strings.TrimSpace(v))
	}
	return h
}

// Do sends req through the check's client and reads the whole body.
func (t *T) Do(req *http.Request) *Resp {
	r, err := t.DoErr(req)
	if err != nil {
		t.Fatalf("%s: %v", t.lastReq(), err)
	}
	return r
}

// DoErr is Do returning the transport error instead of failing; safe to
// call from goroutines.
func (t *T) DoErr(req *http.Request) (*Resp, error) {
	req = req.WithContext(t.ctx)
	desc := req.Method + " " + req.URL.RequestURI()
	if id := req.Header.Get("X-Request-Id"); id != "" {
		desc += " (X-Request-Id: " + id + ")"
	}
	t.setLast(desc)
	start := time.Now()
	resp, err := t.client.Do(req)
	if err != nil {
		return nil, err
	}
	body, berr := io.ReadAll(resp.Body)
	resp.Body.Close()
	return &Resp{Response: resp, Body: body, BodyErr: berr, Elapsed: time.Since(start)}, nil
}

// Get sends GET path with the given "Name: value" fields.
func (t *T) Get(path string, fields ...string) *Resp {
	return t.Do(t.NewRequest("GET", path, nil, fields...))
}

// Post sends POST path with body (Content-Length known).
func (t *T) Post(path string, body []byte, fields ...string) *Resp {
	return t.Do(t.NewRequest("POST", path, bytes.NewReader(body), fields...))
}

// NewRequest builds a request to the watchdog.
func (t *T) NewRequest(method, path string, body io.Reader, fields ...string) *http.Request {
	req, err := http.NewRequestWithContext(t.ctx, method, t.WD.URL(path), body)
	if err != nil {
		t.Fatalf("build request %s %s: %v", method, path, err)
	}
	req.Header = header(fields...)
	return req
}

// Status requires r's status code.
func (t *T) Status(r *Resp, want int) {
	if r.StatusCode != want {
		t.Fatalf("%s: status: got %d; want %d\ngot response: %s", t.lastReq(), r.StatusCode, want, r)
	}
	if r.BodyErr != nil {
		t.Fatalf("%s: body cut short: %v\ngot response: %s", t.lastReq(), r.BodyErr, r)
	}
}

// JSON requires status want and returns the JSON object body.
func (t *T) JSON(r *Resp, want int) map[string]any {
	t.Status(r, want)
	var m map[string]any
	if err := json.Unmarshal(r.Body, &m); err != nil {
		t.Fatalf("%s: body is not a JSON object: %v\ngot response: %s", t.lastReq(), err, r)
	}
	return m
}

// Echo requires a 200 echo and decodes it.
func (t *T) Echo(r *Resp) *expect.EchoBody {
	t.Status(r, 200)
	e, err := expect.ParseEcho(r.Body)
	if err != nil || e.Method == nil {
		t.Fatalf("%s: not an echo response: %v\ngot response: %s", t.lastReq(), err, r)
	}
	return e
}

// WatchdogError requires the §8.1 error response of type typ raised by
// the watchdog, with AfterBurn-Error, and returns its body.
func (t *T) WatchdogError(r *Resp, status int, typ string) *expect.ErrorBody {
	eb, err := expect.ErrorResponse(status, typ, r.Expect())
	if err != nil {
		t.Fatalf("%s: %v\ngot response: %s", t.lastReq(), err, r)
	}
	if got := r.Header.Get("AfterBurn-Error"); got != typ {
		t.Fatalf("%s: AfterBurn-Error: got %q; want %q (§8.1)\ngot response: %s", t.lastReq(), got, typ, r)
	}
	if id := r.Header.Get("AfterBurn-Request-Id"); eb.RequestID != "" && id != eb.RequestID {
		t.Fatalf("%s: error body request_id %q differs from AfterBurn-Request-Id %q (§5.1)", t.lastReq(), eb.RequestID, id)
	}
	return eb
}

// Eventually polls cond until it holds or the check's time runs out.
// It waits on the watchdog's own signals (/metrics, /_/ready, its log),
// never for a fixed time.
func (t *T) Eventually(what string, cond func() (bool, string)) {
	var last string
	for {
		ok, state := cond()
		if ok {
			return
		}
		last = state
		select {
		case <-t.ctx.Done():
			t.Fatalf("timed out waiting for %s; last seen: %s", what, last)
		case <-time.After(pollInterval):
		}
	}
}

// ReadyStatus fetches /_/ready.
func (t *T) ReadyStatus() (int, *Status) {
	code, st, body, err := t.WD.status(t.ctx, "/_/ready")
	if err != nil {
		t.Fatalf("GET /_/ready: %v (body %q)", err, body)
	}
	return code, st
}

// WaitBusy waits until /_/ready reports n busy workers.
func (t *T) WaitBusy(n int) {
	t.Eventually(fmt.Sprintf("%d busy worker(s) in /_/ready", n), func() (bool, string) {
		code, st, body, err := t.WD.status(t.ctx, "/_/ready")
		if err != nil || st.Busy == nil {
			return false, fmt.Sprintf("%d %q %v", code, body, err)
		}
		return *st.Busy == n, string(body)
	})
}

// WaitIdle waits until n workers are idle.
func (t *T) WaitIdle(n int) {
	if err := t.WD.WaitReady(t.ctx, n); err != nil {
		t.Fatalf("%v", err)
	}
}

// LogWait waits until re matches the watchdog log written after from.
func (t *T) LogWait(from int64, re *regexp.Regexp) []string {
	m, err := t.WD.Log.WaitFor(t.ctx, from, re)
	if err != nil {
		t.Fatalf("the watchdog log never matched %q", re)
	}
	return m
}

// Raw is a TCP connection to the watchdog for requests net/http would
// rewrite (hop-by-hop fields, Expect, exact request-targets).
type Raw struct {
	t  *T
	c  net.Conn
	br *bufio.Reader
}

// Dial opens a raw connection to the watchdog.
func (t *T) Dial() *Raw {
	var d net.Dialer
	c, err := d.DialContext(t.ctx, "tcp", t.WD.Addr)
	if err != nil {
		t.Fatalf("dial %s: %v", t.WD.Addr, err)
	}
	if dl, ok := t.ctx.Deadline(); ok {
		c.SetDeadline(dl)
	}
	t.Cleanup(func() { c.Close() })
	return &Raw{t: t, c: c, br: bufio.NewReader(c)}
}

// Send writes raw bytes.
func (r *Raw) Send(s string) {
	if line, _, ok := strings.Cut(s, "\r\n"); ok && strings.HasSuffix(line, "HTTP/1.1") {
		r.t.setLast("raw " + line)
	}
	if _, err := io.WriteString(r.c, s); err != nil {
		r.t.Fatalf("%s: write: %v", r.t.lastReq(), err)
	}
}

// Read reads one response to a request of the given method.
func (r *Raw) Read(method string) *Resp {
	start := time.Now()
	resp, err := http.ReadResponse(r.br, &http.Request{Method: method})
	if err != nil {
		r.t.Fatalf("%s: reading the response: %v", r.t.lastReq(), err)
	}
	body, berr := io.ReadAll(resp.Body)
	return &Resp{Response: resp, Body: body, BodyErr: berr, Elapsed: time.Since(start)}
}

// SendLenient writes raw bytes from a goroutine and ignores write errors:
// the watchdog may answer and close before it has read them all.
func (r *Raw) SendLenient(s string) {
	if line, _, ok := strings.Cut(s, "\r\n"); ok {
		r.t.setLast("raw " + line)
	}
	go io.WriteString(r.c, s)
}

// Close closes the connection.
func (r *Raw) Close() { r.c.Close() }

// cutShort reports a body that ended early (the connection was closed
// before the body's framing said it would end), as opposed to a timeout.
func cutShort(err error) bool {
	return err != nil && !errors.Is(err, os.ErrDeadlineExceeded) && !errors.Is(err, context.DeadlineExceeded)
}
