package e2e

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"
	"reflect"
	"regexp"
	"strings"

	"github.com/afterburn-dev/afterburn/conformance/internal/expect"
	"github.com/afterburn-dev/afterburn/conformance/internal/vectors"
)

// rid returns a unique request id with a readable prefix.
func rid(prefix string) string {
	b := make([]byte, 6)
	rand.Read(b)
	return prefix + "-" + hex.EncodeToString(b)
}

var freshID = regexp.MustCompile(`^[0-9a-f]{32}$`)

func str(s string) *string { return &s }
func num(n int64) *int64   { return &n }

// matchEcho applies the vector matcher to an echo response.
func (t *T) matchEcho(r *Resp, want vectors.Echo, absent ...string) *expect.EchoBody {
	e := t.Echo(r)
	if err := expect.Echo(&want, absent, r.Expect()); err != nil {
		t.Fatalf("%s: %v\ngot response: %s", t.lastReq(), err, r)
	}
	return e
}

// echoHeaders returns the echoed fields as a field list.
func echoHeaders(e *expect.EchoBody) vectors.Fields {
	var f vectors.Fields
	for _, p := range e.Headers {
		if len(p) == 2 {
			f = append(f, [2]string{p[0], p[1]})
		}
	}
	return f
}

// whoami is the fixture's /whoami answer.
type whoami struct {
	Pid      int
	WorkerID string
	Protocol string
	Requests int
}

func (t *T) whoami(r *Resp) whoami {
	m := t.JSON(r, 200)
	pid, ok1 := m["pid"].(float64)
	req, ok2 := m["requests"].(float64)
	wid, ok3 := m["worker_id"].(string)
	proto, ok4 := m["protocol"].(string)
	if !ok1 || !ok2 || !ok3 || !ok4 {
		t.Fatalf("%s: /whoami body lacks pid, requests, worker_id or protocol: %s", t.lastReq(), r)
	}
	return whoami{Pid: int(pid), WorkerID: wid, Protocol: proto, Requests: int(req)}
}

// keepAliveSameWorkers: with lanes too (§2.5) one request at a time is served by the worker
// processes of the pool, and a worker's request counter still counts 1, 2, 3: the requests
// are sequential, so no other exchange runs on another lane in between.
func keepAliveSameWorkers(t *T) {
	rc := t.Dial()
	seen := map[int][]int{}
	for i := 0; i < 20; i++ {
		rc.Send("GET /whoami HTTP/1.1\r\nHost: fn\r\n\r\n")
		r := rc.Read("GET")
		w := t.whoami(r)
		if r.Close {
			t.Fatalf("request %d: the watchdog closed a keep-alive connection: %s", i+1, r)
		}
		seen[w.Pid] = append(seen[w.Pid], w.Requests)
	}
	if t.cfg.isolated() {
		// §2.7: each request a fresh fork, whose first user request it is.
		if len(seen) != 20 {
			t.Fatalf("20 requests under isolation=request were served by %d processes %v; want 20, one each (§2.7)", len(seen), seen)
		}
		for pid, counts := range seen {
			if len(counts) != 1 || counts[0] != 1 {
				t.Fatalf("pid %d: request counters %v; want [1]: a fresh process whose handler never saw the handshake (§2.7, §3.1)", pid, counts)
			}
		}
		return
	}
	if len(seen) > 2 {
		t.Fatalf("20 requests were served by %d processes %v; want at most the 2 workers", len(seen), seen)
	}
	workers := t.Workers()
	for pid, counts := range seen {
		found := false
		for _, w := range workers {
			found = found || w == pid
		}
		if !found {
			t.Fatalf("pid %d served a request but is not a child of the watchdog (children %v)", pid, workers)
		}
		for i, n := range counts {
			if n != i+1 {
				t.Fatalf("pid %d: request counters %v; want 1, 2, 3, ...: the first user request counts 1, so the handshake never reached the handler (§3.1), and no other request ran in between", pid, counts)
			}
		}
	}
}

func statusJSON(t *T, path string) {
	code, st, body, err := t.WD.status(t.ctx, path)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	if code != 200 {
		t.Fatalf("GET %s: got %d %q; want 200", path, code, body)
	}
	if st.Starting == nil || st.Idle == nil || st.Busy == nil || st.Backoff == nil || st.CrashLooping == nil {
		t.Fatalf("GET %s: body %q lacks one of starting, idle, busy, backoff, crash_looping", path, body)
	}
	if *st.Idle+*st.Busy < 1 || *st.CrashLooping != 0 {
		t.Fatalf("GET %s: body %q; want a ready worker and crash_looping 0", path, body)
	}
	if n := *st.Starting + *st.Idle + *st.Busy + *st.Backoff; n != 2 {
		t.Fatalf("GET %s: body %q counts %d workers; want the 2 slots", path, body, n)
	}
}

func readyJSON(t *T)  { statusJSON(t, "/_/ready") }
func healthJSON(t *T) { statusJSON(t, "/_/health") }

// metricsOwnListener: §10.1 — with -metrics_port 0 (StartWatchdog) /metrics is
// on a listener of its own, logged as "metrics on ADDR", that answers no other
// path; /metrics on the function port goes to the function.
func metricsOwnListener(t *T) {
	if t.WD.MetricsAddr == t.WD.Addr {
		t.Fatalf("started with -metrics_port 0, the watchdog logged no \"metrics on ADDR\" line before \"listening on\" (§10.1)\n%s", t.WD.Tail())
	}
	get := func(url string) (int, string, string) {
		t.setLast("GET " + url)
		resp, err := probeClient.Get(url)
		if err != nil {
			t.Fatalf("GET %s: %v", url, err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatalf("GET %s: reading the body: %v", url, err)
		}
		return resp.StatusCode, resp.Header.Get("Content-Type"), string(b)
	}
	code, ctype, body := get(t.WD.MetricsURL())
	if code != 200 || !strings.HasPrefix(ctype, "text/plain") || !strings.Contains(body, "afterburn_workers{") {
		t.Fatalf("GET %s: got %d %q %.200q; want 200 text/plain with afterburn_workers (§10.4)", t.WD.MetricsURL(), code, ctype, body)
	}
	for _, path := range []string{"/_/ready", "/echo"} {
		url := "http://" + t.WD.MetricsAddr + path
		if code, _, body := get(url); code != 404 {
			t.Fatalf("GET %s: got %d %.200q; want 404: the metrics listener answers /metrics only (§10.1)", url, code, body)
		}
	}
	e := t.Echo(t.Get("/metrics"))
	if e.Path == nil || *e.Path != "/metrics" {
		t.Fatalf("GET /metrics on the function port: the handler saw path %v; want /metrics: the function owns it (§10.1)", e.Path)
	}
}

func workerEnvironment(t *T) {
	for i := 0; i < 6; i++ {
		w := t.whoami(t.Get("/whoami"))
		if w.WorkerID != "1" && w.WorkerID != "2" {
			t.Fatalf("worker_id: got %q; want 1 or 2 (AFTERBURN_WORKER_ID, §2.3)", w.WorkerID)
		}
		ok := false
		for _, v := range strings.Split(w.Protocol, ",") {
			ok = ok || strings.TrimSpace(v) == "1"
		}
		if !ok {
			t.Fatalf("protocol: got %q; want a list holding 1 (AFTERBURN_PROTOCOL, §2.3)", w.Protocol)
		}
	}
}

func workerProcessGroup(t *T) {
	if t.cfg.isolated() {
		t.WaitIdle(2) // §2.7: the spares of the requests before may still be forking
	}
	ws := t.Workers()
	if len(ws) != 2 {
		t.Fatalf("the watchdog has %d child processes %v; want its 2 workers", len(ws), ws)
	}
	for _, pid := range ws {
		g, err := pgrp(pid)
		if err != nil {
			t.Fatalf("process group of %d: %v", pid, err)
		}
		if g != pid {
			t.Fatalf("worker %d is in process group %d; want a group of its own (%d)", pid, g, pid)
		}
	}
}

func echo(t *T) {
	rc := t.Dial()
	rc.Send("POST /echo/a%20b?x=1&y=%2F HTTP/1.1\r\nHost: fn.example\r\nX-Custom: v\r\nContent-Length: 5\r\n\r\nhello")
	t.matchEcho(rc.Read("POST"), vectors.Echo{
		Method: str("POST"), Path: str("/echo/a%20b"), Query: str("x=1&y=%2F"),
		Headers: vectors.Fields{{"host", "fn.example"}, {"x-custom", "v"}},
		BodyB64: str(base64.StdEncoding.EncodeToString([]byte("hello"))), BodyLen: num(5),
	}, "afterburn-request-id", "afterburn-timeout-ms")
}

func requestIDHeader(t *T) {
	var ids []string
	for i := 0; i < 2; i++ {
		r := t.Get("/echo")
		e := t.Echo(r)
		id := r.Header.Get("AfterBurn-Request-Id")
		if !freshID.MatchString(id) {
			t.Fatalf("AfterBurn-Request-Id: got %q; want 32 lower-case hex digits", id)
		}
		if e.RequestID == nil || *e.RequestID != id {
			t.Fatalf("the handler saw request id %v; the response says %q", e.RequestID, id)
		}
		ids = append(ids, id)
	}
	if ids[0] == ids[1] {
		t.Fatalf("two requests got the same id %q", ids[0])
	}
}

func xRequestIDReused(t *T) {
	id := rid("Ab.9_:-x")
	r := t.Get("/echo", "X-Request-Id: "+id)
	e := t.Echo(r)
	if got := r.Header.Get("AfterBurn-Request-Id"); got != id {
		t.Fatalf("AfterBurn-Request-Id: got %q; want the client's X-Request-Id %q", got, id)
	}
	if e.RequestID == nil || *e.RequestID != id {
		t.Fatalf("the handler saw request id %v; want %q", e.RequestID, id)
	}
}

func xRequestIDInvalid(t *T) {
	for _, bad := range []string{"has space", strings.Repeat("a", 129), "semi;colon"} {
		r := t.Get("/echo", "X-Request-Id: "+bad)
		e := t.Echo(r)
		id := r.Header.Get("AfterBurn-Request-Id")
		if !freshID.MatchString(id) {
			t.Fatalf("X-Request-Id %q: AfterBurn-Request-Id got %q; want a fresh 32-hex id", bad, id)
		}
		if e.RequestID == nil || *e.RequestID != id {
			t.Fatalf("X-Request-Id %q: the handler saw %v; the response says %q", bad, e.RequestID, id)
		}
	}
}

func clientAfterBurnStripped(t *T) {
	rc := t.Dial()
	rc.Send("GET /echo/stripped HTTP/1.1\r\nHost: fn\r\nAfterBurn-Request-Id: evil-id\r\nAfterBurn-Timeout-Ms: 1\r\n" +
		"AfterBurn-Handshake: 1\r\nAfterBurn-Custom: x\r\nafterburn-lower: y\r\nX-Kept: 1\r\n\r\n")
	r := rc.Read("GET")
	e := t.matchEcho(r, vectors.Echo{Method: str("GET"), Path: str("/echo/stripped"),
		Headers: vectors.Fields{{"x-kept", "1"}}})
	for _, f := range echoHeaders(e) {
		if strings.HasPrefix(f[0], "afterburn-") {
			t.Fatalf("the handler saw %s: %s; want every client AfterBurn-* field removed (§5.3)", f[0], f[1])
		}
	}
	if e.RequestID == nil || *e.RequestID == "evil-id" || *e.RequestID != r.Header.Get("AfterBurn-Request-Id") {
		t.Fatalf("request id: the handler saw %v, the response says %q; want the watchdog's own id, not evil-id",
			e.RequestID, r.Header.Get("AfterBurn-Request-Id"))
	}
}

func hopByHopRequest(t *T) {
	rc := t.Dial()
	rc.Send("GET /echo HTTP/1.1\r\nHost: fn\r\nConnection: X-Foo\r\nX-Foo: 1\r\nKeep-Alive: timeout=5\r\nTE: trailers\r\n" +
		"Proxy-Connection: keep-alive\r\nProxy-Authorization: Basic eDp5\r\nUpgrade: example/1\r\nX-Bar: kept\r\n\r\n")
	t.matchEcho(rc.Read("GET"), vectors.Echo{Headers: vectors.Fields{{"x-bar", "kept"}}},
		"connection", "x-foo", "keep-alive", "te", "proxy-connection", "proxy-authorization", "upgrade", "trailer")
}

func hopByHopResponse(t *T) {
	r := t.Get("/headers?Connection=X-Bar&X-Bar=1&Keep-Alive=timeout%3D5&Proxy-Authenticate=Basic&Upgrade=example%2F1&X-Keep=1")
	t.Status(r, 200)
	if err := expect.Check(&vectors.Response{
		Headers:       vectors.Fields{{"x-keep", "1"}},
		AbsentHeaders: []string{"x-bar", "keep-alive", "proxy-authenticate", "upgrade"},
	}, r.Expect()); err != nil {
		t.Fatalf("%s: %v\ngot response: %s", t.lastReq(), err, r)
	}
}

func responseAfterBurnStripped(t *T) {
	id := rid("resp-strip")
	r := t.Get("/headers?AfterBurn-Secret=x&AfterBurn-Request-Id=evil&X-Keep=1", "X-Request-Id: "+id)
	t.Status(r, 200)
	if err := expect.Check(&vectors.Response{
		Headers:       vectors.Fields{{"x-keep", "1"}, {"afterburn-request-id", id}},
		AbsentHeaders: []string{"afterburn-secret"},
	}, r.Expect()); err != nil {
		t.Fatalf("%s: %v\ngot response: %s", t.lastReq(), err, r)
	}
}

func multiValuedRequest(t *T) {
	rc := t.Dial()
	rc.Send("GET /echo HTTP/1.1\r\nHost: fn\r\nAccept-Language: en\r\nX-Other: 1\r\nAccept-Language: fr;q=0.5\r\nAccept-Language: de\r\n\r\n")
	t.matchEcho(rc.Read("GET"), vectors.Echo{Headers: vectors.Fields{
		{"accept-language", "en"}, {"accept-language", "fr;q=0.5"}, {"accept-language", "de"}, {"x-other", "1"}}})
}

func multiValuedResponse(t *T) {
	r := t.Get("/headers?Set-Cookie=a%3D1&X-One=1&Set-Cookie=b%3D2")
	t.Status(r, 200)
	if got, want := r.Header.Values("Set-Cookie"), []string{"a=1", "b=2"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("Set-Cookie values: got %q; want %q\ngot response: %s", got, want, r)
	}
}

func allByteValues(t *T) {
	body := make([]byte, 1024)
	for i := range body {
		body[i] = byte(i)
	}
	t.matchEcho(t.Post("/echo", body, "Content-Type: application/octet-stream"),
		vectors.Echo{BodyB64: str(base64.StdEncoding.EncodeToString(body)), BodyLen: num(1024)})
}

func clientChunkedTrailers(t *T) {
	rc := t.Dial()
	rc.Send("POST /echo HTTP/1.1\r\nHost: fn\r\nTransfer-Encoding: chunked\r\nTrailer: X-T\r\n\r\n" +
		"5\r\nhello\r\n6\r\n world\r\n0\r\nX-T: 1\r\n\r\n")
	t.matchEcho(rc.Read("POST"), vectors.Echo{Method: str("POST"),
		BodyB64: str(base64.StdEncoding.EncodeToString([]byte("hello world"))), BodyLen: num(11),
		Trailers: vectors.Fields{{"x-t", "1"}}})
}

func emptyPost(t *T) {
	rc := t.Dial()
	rc.Send("POST /echo HTTP/1.1\r\nHost: fn\r\nContent-Length: 0\r\n\r\n")
	t.matchEcho(rc.Read("POST"), vectors.Echo{Method: str("POST"), BodyB64: str(""), BodyLen: num(0)})
}

// noBodyThenNext sends a request whose response has no body and a second
// request on the same connection: stray body bytes would break the second.
func noBodyThenNext(t *T, method, target string, status int) {
	rc := t.Dial()
	rc.Send(method + " " + target + " HTTP/1.1\r\nHost: fn\r\n\r\n")
	r := rc.Read("HEAD") // read with no body whatever the framing says
	if r.StatusCode != status {
		t.Fatalf("%s: status: got %d; want %d\ngot response: %s", t.lastReq(), r.StatusCode, status, r)
	}
	rc.Send("GET /echo/after HTTP/1.1\r\nHost: fn\r\n\r\n")
	t.matchEcho(rc.Read("GET"), vectors.Echo{Path: str("/echo/after")})
}

func headNoBody(t *T) {
	noBodyThenNext(t, "HEAD", "/large?size=100", 200)
	noBodyThenNext(t, "HEAD", "/echo", 200)
}

func status204(t *T) {
	noBodyThenNext(t, "GET", "/status?code=204", 204)
	noBodyThenNext(t, "GET", "/status?code=304", 304)
}

func functionErrorsPassThrough(t *T) {
	for _, code := range []int{404, 500, 503} {
		r := t.Get(fmt.Sprintf("/status?code=%d", code))
		t.Status(r, code)
		if v := r.Header.Get("AfterBurn-Error"); v != "" {
			t.Fatalf("%s: AfterBurn-Error %q on the function's own %d; want none", t.lastReq(), v, code)
		}
		if len(r.Body) != 0 {
			t.Fatalf("%s: body %q; want the function's empty body", t.lastReq(), r.Body)
		}
	}
}

func stream(t *T) {
	r := t.Get("/stream?n=5&size=10")
	t.Status(r, 200)
	if len(r.TransferEncoding) == 0 || r.TransferEncoding[0] != "chunked" {
		t.Fatalf("%s: Transfer-Encoding %q; want chunked\ngot response: %s", t.lastReq(), r.TransferEncoding, r)
	}
	var want bytes.Buffer
	for i := 0; i < 5; i++ {
		want.Write(bytes.Repeat([]byte{byte('0' + i%10)}, 10))
	}
	if !bytes.Equal(r.Body, want.Bytes()) {
		t.Fatalf("%s: body %q; want %q", t.lastReq(), r.Body, want.Bytes())
	}
}
