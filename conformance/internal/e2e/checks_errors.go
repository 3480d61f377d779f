package e2e

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"syscall"
	"time"

	"github.com/afterburn-dev/afterburn/conformance/internal/expect"
	"github.com/afterburn-dev/afterburn/conformance/internal/vectors"
)

// echoesOwnIDs sends n concurrent echoes with unique ids and requires each
// to come back with its own id and body: no response went to another request.
func echoesOwnIDs(t *T, n int) {
	out := make(chan loadResult, n)
	for i := 0; i < n; i++ {
		id := rid(fmt.Sprintf("own%d", i))
		go func() {
			r, err := t.DoErr(t.NewRequest("POST", "/echo/"+id, strings.NewReader("body-"+id), "X-Request-Id: "+id))
			out <- loadResult{id, r, err}
		}()
	}
	for i := 0; i < n; i++ {
		checkOwnEcho(t, <-out)
	}
}

func throwHandlerError(t *T) {
	t.WaitIdle(2)
	before := t.Metrics().Sum("afterburn_worker_restarts_total")
	pids := t.Workers()
	id := rid("throw")
	r := t.Get("/throw", "X-Request-Id: "+id)
	eb, err := expect.ErrorResponse(500, "handler_error", r.Expect())
	if err != nil {
		t.Fatalf("%s: %v\ngot response: %s", t.lastReq(), err, r)
	}
	if eb.RequestID != id {
		t.Fatalf("%s: error body request_id %q; want %q (§8.1)", t.lastReq(), eb.RequestID, id)
	}
	if got := r.Header.Get("AfterBurn-Error"); got != "handler_error" {
		t.Fatalf("%s: AfterBurn-Error %q; want handler_error (§8.1)\ngot response: %s", t.lastReq(), got, r)
	}
	if got := r.Header.Get("AfterBurn-Request-Id"); got != id {
		t.Fatalf("%s: AfterBurn-Request-Id %q; want %q", t.lastReq(), got, id)
	}
	echoesOwnIDs(t, 4)
	if after := t.Metrics().Sum("afterburn_worker_restarts_total"); after != before {
		t.Fatalf("worker restarts went from %v to %v; want none: the library keeps serving after a handler error (§8.3)", before, after)
	}
	if now := t.Workers(); !t.cfg.isolated() && !samePids(pids, now) {
		t.Fatalf("worker processes changed from %v to %v; want the same", pids, now)
	}
}

// cutBody requires a 200 whose body ends early and starts with prefix.
func cutBody(t *T, r *Resp, prefix string) {
	if r.StatusCode != 200 {
		t.Fatalf("%s: status %d; want the 200 head that was already sent\ngot response: %s", t.lastReq(), r.StatusCode, r)
	}
	if !cutShort(r.BodyErr) {
		t.Fatalf("%s: the body ended cleanly; want it visibly incomplete (§8.7)\ngot response: %s", t.lastReq(), r)
	}
	if !bytes.HasPrefix(r.Body, []byte(prefix)) {
		t.Fatalf("%s: body %q; want it to start with %q", t.lastReq(), r.Body, prefix)
	}
	if bytes.Contains(r.Body, []byte(`"type"`)) {
		t.Fatalf("%s: an error body was appended to a started response: %q (§8.7)", t.lastReq(), r.Body)
	}
}

func throwMidBody(t *T) {
	cutBody(t, t.Get("/throw?when=mid-body"), "partial")
	echoesOwnIDs(t, 2)
}

func crashBeforeHead(t *T) {
	wantCrashed(t, "crash", func(id string) *Resp { return t.Get("/crash", "X-Request-Id: "+id) })
}

func crashAfterHead(t *T) {
	cutBody(t, t.Get("/crash?when=after-head"), "")
	echoesOwnIDs(t, 2)
}

func crashAfterResponse(t *T) {
	t.WaitIdle(2)
	m := t.Metrics()
	before := m.Sum("afterburn_worker_restarts_total")
	r := t.Get("/crash?when=after-response")
	t.Status(r, 200)
	if string(r.Body) != "bye" {
		t.Fatalf("%s: body %q; want %q", t.lastReq(), r.Body, "bye")
	}
	if t.cfg.isolated() {
		// §2.7: the worker had served its one exchange; its exit, whatever
		// its status, is its end, not a restart.
		t.WaitIdle(2)
		echoesOwnIDs(t, 4)
		return
	}
	// The worker exits once idle; no request is sent before its
	// replacement is counted, so none can race with the exit (§9.3).
	t.Eventually("a worker restart", func() (bool, string) {
		now := t.Metrics().Sum("afterburn_worker_restarts_total")
		return now >= before+1, fmt.Sprintf("restarts %v, before %v", now, before)
	})
	echoesOwnIDs(t, 4)
}

func killBusyWorker(t *T) {
	t.WaitIdle(2)
	lanes, crashedLoad := t.lanesPerWorker(2) > 1, 0
	ws := t.Workers()
	if len(ws) != 2 {
		t.Fatalf("the watchdog has %d child processes %v; want its 2 workers", len(ws), ws)
	}
	before := t.Restarts("crashed")
	inits := t.Metric("afterburn_worker_init_duration_seconds_count")
	id := rid("victim")
	victimDone := make(chan *Resp, 1)
	go func() {
		r, err := t.DoErr(t.NewRequest("GET", "/sleep?ms=8000", nil, "X-Request-Id: "+id))
		if err != nil {
			r = &Resp{BodyErr: err}
		}
		victimDone <- r
	}()
	t.WaitBusy(1)
	// The idle worker answers /whoami; the busy one is the other child
	// (§2.5 dispatch: a free lane of the worker with the fewest busy lanes).
	idle := t.whoami(t.Get("/whoami")).Pid
	victim := 0
	for _, p := range ws {
		if p != idle {
			victim = p
		}
	}
	if victim == 0 || len(ws) != 2 {
		t.Fatalf("cannot tell the busy worker: children %v, idle worker %d", ws, idle)
	}
	// Load: three clients keep sending uniquely identified echoes from before
	// the kill until after the restart; every one must get its own response.
	stopLoad := make(chan struct{})
	loadDone := make(chan []loadResult, 3)
	for c := 0; c < 3; c++ {
		go func() {
			var out []loadResult
			for i := 0; ; i++ {
				select {
				case <-stopLoad:
					loadDone <- out
					return
				default:
				}
				lid := rid(fmt.Sprintf("load%d", c))
				r, err := t.DoErr(t.NewRequest("POST", "/echo/"+lid, strings.NewReader("body-"+lid), "X-Request-Id: "+lid))
				out = append(out, loadResult{lid, r, err})
			}
		}()
	}
	if err := syscall.Kill(victim, syscall.SIGKILL); err != nil {
		close(stopLoad)
		t.Fatalf("kill -9 %d: %v", victim, err)
	}
	var r *Resp
	select {
	case r = <-victimDone:
	case <-t.ctx.Done():
		close(stopLoad)
		t.Fatalf("GET /sleep?ms=8000 on the killed worker %d got no answer", victim)
	}
	t.WaitMetric(before+1, "afterburn_worker_restarts_total", "reason", "crashed")
	// The replacement passed its handshake while the load went on.
	t.WaitMetric(inits+1, "afterburn_worker_init_duration_seconds_count")
	close(stopLoad)
	var load []loadResult
	for c := 0; c < 3; c++ {
		load = append(load, <-loadDone...)
	}
	if r.Response == nil {
		t.Fatalf("GET /sleep?ms=8000 on the killed worker: %v; want 502 worker_crashed", r.BodyErr)
	}
	t.setLast("GET /sleep?ms=8000 (X-Request-Id: " + id + ")")
	if eb := t.WatchdogError(r, 502, "worker_crashed"); eb.RequestID != id {
		t.Fatalf("error body request_id %q; want %q", eb.RequestID, id)
	}
	if r.Elapsed > 6*time.Second {
		t.Fatalf("the 502 came after %v; want it when the worker died", r.Elapsed)
	}
	if len(load) < 3 {
		t.Fatalf("only %d requests of load were sent", len(load))
	}
	for _, x := range load {
		// §2.5: a worker with several lanes fails each exchange in flight on
		// them, and nothing else: a load echo that was on another lane of the
		// victim may get its own 502 worker_crashed, never another's answer.
		if lanes && x.err == nil && x.r.StatusCode == 502 {
			t.setLast("POST /echo/" + x.id)
			if eb := t.WatchdogError(x.r, 502, "worker_crashed"); eb.RequestID != x.id {
				t.Fatalf("POST /echo/%s: error body request_id %q; want its own", x.id, eb.RequestID)
			}
			crashedLoad++
			continue
		}
		checkOwnEcho(t, x)
	}
	if crashedLoad > 3 {
		t.Fatalf("%d load requests got 502 worker_crashed; want at most one per client (each client has one request in flight at the kill)", crashedLoad)
	}
}

// loadResult is one uniquely identified echo sent under load.
type loadResult struct {
	id  string
	r   *Resp
	err error
}

// checkOwnEcho fails unless x got a 200 echo of its own id and body.
func checkOwnEcho(t *T, x loadResult) {
	if x.err != nil {
		t.Fatalf("POST /echo/%s: %v", x.id, x.err)
	}
	if x.r.StatusCode != 200 {
		t.Fatalf("POST /echo/%s: got %s; want 200", x.id, x.r)
	}
	if err := expect.Echo(&vectors.Echo{Path: str("/echo/" + x.id), RequestID: str(x.id),
		BodyB64: str(base64.StdEncoding.EncodeToString([]byte("body-" + x.id)))}, nil, x.r.Expect()); err != nil {
		t.Fatalf("POST /echo/%s got another request's response? %v\ngot response: %s", x.id, err, x.r)
	}
}

func garbageInstead(t *T) {
	before := t.Restarts("bad_response")
	perr := t.Metric("afterburn_protocol_errors_total", "kind", "bad_response")
	id := rid("garbage")
	r := t.Get("/garbage?when=instead", "X-Request-Id: "+id)
	if eb := t.WatchdogError(r, 502, "bad_response"); eb.RequestID != id {
		t.Fatalf("%s: error body request_id %q; want %q", t.lastReq(), eb.RequestID, id)
	}
	t.WaitMetric(before+1, "afterburn_worker_restarts_total", "reason", "bad_response")
	t.WaitMetric(perr+1, "afterburn_protocol_errors_total", "kind", "bad_response")
	echoesOwnIDs(t, 2)
}

func garbageAfter(t *T) {
	t.WaitIdle(2)
	before := t.Restarts("unsolicited_output")
	badResponse := t.Restarts("bad_response")
	exchange := t.Metric("afterburn_protocol_errors_total", "kind", "exchange")
	r := t.Get("/garbage?when=after")
	if r.StatusCode == 502 {
		// §4.6: the fixture writes that response itself, past the library,
		// so it carries no exchange token: a library that lists the
		// capability has the watchdog refuse it before the garbage matters.
		t.WatchdogError(r, 502, "bad_response")
		t.WaitMetric(exchange+1, "afterburn_protocol_errors_total", "kind", "exchange")
		t.ReplacedOnceIdle(2, "bad_response", badResponse)
	} else {
		t.Status(r, 200)
		if string(r.Body) != `{"ok": true}` {
			t.Fatalf("%s: body %q; want %q", t.lastReq(), r.Body, `{"ok": true}`)
		}
	}
	for i := 0; i < 3; i++ {
		echoesOwnIDs(t, 2)
	}
	if r.StatusCode != 502 {
		t.WaitMetric(before+1, "afterburn_worker_restarts_total", "reason", "unsolicited_output")
	}
}

func printTagged(t *T) {
	text := rid("PRINT")
	from := t.WD.Log.Len()
	m := t.JSON(t.Get("/print?text="+text), 200)
	if m["printed"] != true {
		t.Fatalf("%s: got %v; want printed true", t.lastReq(), m)
	}
	echoesOwnIDs(t, 2)
	tagged := regexp.MustCompile(`(?m)^.*\bw[0-9]+\b.*` + regexp.QuoteMeta(text) + `.*$`)
	t.Eventually("three tagged log lines with "+text, func() (bool, string) {
		lines := tagged.FindAllString(t.WD.Log.Since(from), -1)
		return len(lines) >= 3, fmt.Sprintf("%d lines %q", len(lines), lines)
	})
}

func clientDisconnectMidBody(t *T) {
	t.WaitIdle(2)
	before := t.Restarts("request_aborted")
	rc := t.Dial()
	// Chunked: a body of unknown length streams to the worker as it
	// arrives (§6.6), so the worker holds half a request when the client goes.
	rc.Send("POST /echo HTTP/1.1\r\nHost: fn\r\nTransfer-Encoding: chunked\r\n\r\n3e8\r\n" + strings.Repeat("x", 1000) + "\r\n")
	t.WaitBusy(1) // the request reached a worker
	rc.Close()
	t.WaitMetric(before+1, "afterburn_worker_restarts_total", "reason", "request_aborted")
	echoesOwnIDs(t, 4)
}

// bufferedClientGone is §6.6: a body announced by Content-Length is read
// whole before a worker is taken, so a client that gives up half-way costs
// no worker and no restart.
func bufferedClientGone(t *T) {
	t.WaitIdle(2)
	restarts := t.Metrics().Sum("afterburn_worker_restarts_total")
	from := t.WD.Log.Len()
	rc := t.Dial()
	rc.Send("POST /echo/buffered-gone HTTP/1.1\r\nHost: fn\r\nContent-Length: 100000\r\n\r\n" + strings.Repeat("x", 1000))
	// The body is incomplete: the workers stay idle and serve others.
	echoesOwnIDs(t, 4)
	if code, st := t.ReadyStatus(); code != 200 || st == nil || st.Busy == nil || *st.Busy != 0 {
		t.Fatalf("/_/ready %d %+v with half a body in the watchdog; want 200 and no busy worker", code, st)
	}
	rc.Close()
	t.LogWait(from, regexp.MustCompile(`path=/echo/buffered-gone\b.*status=400`))
	echoesOwnIDs(t, 4)
	if got := t.Metrics().Sum("afterburn_worker_restarts_total"); got != restarts {
		t.Fatalf("afterburn_worker_restarts_total went from %v to %v; want no worker replaced (§6.6)", restarts, got)
	}
}

func clientGoneMidResponse(t *T) {
	t.WaitIdle(2)
	restarts := t.Metrics().Sum("afterburn_worker_restarts_total")
	from := t.WD.Log.Len()
	rc := t.Dial()
	// 8 MiB: more than the socket and pipe buffers hold, so the worker is
	// still writing when the client goes.
	rc.Send("GET /large?size=8388608 HTTP/1.1\r\nHost: fn\r\n\r\n")
	resp, err := http.ReadResponse(rc.br, &http.Request{Method: "GET"})
	if err != nil {
		t.Fatalf("%s: reading the head: %v", t.lastReq(), err)
	}
	if _, err := io.ReadFull(resp.Body, make([]byte, 4096)); err != nil {
		t.Fatalf("%s: reading the first body bytes: %v", t.lastReq(), err)
	}
	rc.Close()
	// §6.5: the watchdog reads the response to its end, then logs it.
	t.LogWait(from, regexp.MustCompile(`path=/large\b.*status=200`))
	t.WaitIdle(2)
	echoesOwnIDs(t, 4)
	if got := t.Metrics().Sum("afterburn_worker_restarts_total"); got != restarts {
		t.Fatalf("afterburn_worker_restarts_total went from %v to %v; want no worker replaced (§6.5)", restarts, got)
	}
}

func expect100Continue(t *T) {
	rc := t.Dial()
	rc.Send("POST /echo HTTP/1.1\r\nHost: fn\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n")
	r := rc.Read("POST")
	if r.StatusCode != 100 {
		t.Fatalf("%s: got %s; want 100 Continue before the body is sent", t.lastReq(), r)
	}
	rc.Send("hello")
	t.matchEcho(rc.Read("POST"), vectors.Echo{BodyB64: str(base64.StdEncoding.EncodeToString([]byte("hello")))}, "expect")
}

func expectOther417(t *T) {
	rc := t.Dial()
	rc.Send("POST /echo HTTP/1.1\r\nHost: fn\r\nExpect: something-else\r\nContent-Length: 0\r\n\r\n")
	if r := rc.Read("POST"); r.StatusCode != 417 {
		t.Fatalf("%s: got %s; want 417", t.lastReq(), r)
	}
}

func headerTooLarge(t *T) {
	// Just over max_header_bytes (32768): the watchdog holds the request
	// and answers with the §8.1 body.
	rc := t.Dial()
	rc.SendLenient("GET /echo HTTP/1.1\r\nHost: fn\r\nX-Big: " + strings.Repeat("a", 33000) + "\r\n\r\n")
	t.WatchdogError(rc.Read("GET"), 431, "headers_too_large")
	// Far over it: the watchdog stops reading at max_header_bytes + 4096
	// and answers with the §8.1 body too (§10.5).
	rc = t.Dial()
	rc.SendLenient("GET /echo HTTP/1.1\r\nHost: fn\r\nX-Big: " + strings.Repeat("a", 128<<10) + "\r\n\r\n")
	t.WatchdogError(rc.Read("GET"), 431, "headers_too_large")
	echoesOwnIDs(t, 2)
}

func accessLog(t *T) {
	id := rid("access")
	secret := rid("SECRET")
	from := t.WD.Log.Len()
	t.Status(t.Get("/echo/access-log?token="+secret, "X-Request-Id: "+id), 200)
	line := t.LogWait(from, regexp.MustCompile(`(?m)^.*`+regexp.QuoteMeta(id)+`.*$`))[0]
	for _, want := range []string{"GET", "/echo/access-log", "200"} {
		if !strings.Contains(line, want) {
			t.Fatalf("access-log line %q lacks %q (§9.5: time, request id, method, path, status, bytes, duration, worker id)", line, want)
		}
	}
	if strings.Contains(line, secret) {
		t.Fatalf("access-log line %q holds the query; want the path without it (§9.5)", line)
	}
}

func metricsNames(t *T) {
	m := t.Metrics()
	for name, typ := range map[string]string{
		"afterburn_requests_total":               "counter",
		"afterburn_request_duration_seconds":     "histogram",
		"afterburn_requests_in_flight":           "gauge",
		"afterburn_queue_depth":                  "gauge",
		"afterburn_queue_wait_seconds":           "histogram",
		"afterburn_requests_rejected_total":      "counter",
		"afterburn_worker_restarts_total":        "counter",
		"afterburn_worker_init_duration_seconds": "histogram",
		"afterburn_workers":                      "gauge",
		"afterburn_workers_crash_looping":        "gauge",
		"afterburn_protocol_errors_total":        "counter",
	} {
		if got := m.Types[name]; got != typ {
			t.Fatalf("/metrics: %s has type %q; want %s (§10.4)", name, got, typ)
		}
	}
	if _, ok := m.Get("afterburn_requests_total", "code", "200"); !ok {
		t.Fatalf(`/metrics lacks afterburn_requests_total{code="200"} after 200 responses`)
	}
	for _, s := range []string{"starting", "idle", "busy", "backoff"} {
		if _, ok := m.Get("afterburn_workers", "state", s); !ok {
			t.Fatalf(`/metrics lacks afterburn_workers{state=%q}`, s)
		}
	}
	for _, lbl := range []struct{ name, label, value string }{
		{"afterburn_worker_restarts_total", "reason", "crashed"},
		{"afterburn_requests_rejected_total", "type", "headers_too_large"},
		{"afterburn_protocol_errors_total", "kind", "bad_response"},
	} {
		if _, ok := m.Get(lbl.name, lbl.label, lbl.value); !ok {
			t.Fatalf(`/metrics lacks %s{%s=%q} after such an event`, lbl.name, lbl.label, lbl.value)
		}
	}
}
