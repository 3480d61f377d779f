package exchange

// Native fuzz targets for the two directions of the pipe (PROTOCOL.md §4):
//
//   - FuzzResponse: arbitrary bytes as a worker's response, through exchange.run —
//     the code path of every request — against a fake worker on real pipes.
//   - FuzzRequestWrite: a request net/http could hand the watchdog, through writeHead
//     and sendBody, read back by a strict parser of §4.2/§4.3.
//
// `go test` runs the seeds below and testdata/fuzz/; `go test -fuzz FuzzName` explores.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/afterburn-dev/afterburn/go/internal/watchdog/buffer"
	"github.com/afterburn-dev/afterburn/go/internal/watchdog/config"
	"github.com/afterburn-dev/afterburn/go/internal/watchdog/obs"
	"github.com/afterburn-dev/afterburn/go/internal/watchdog/pool"
	"github.com/afterburn-dev/afterburn/go/internal/watchdog/wire"
	"github.com/afterburn-dev/afterburn/go/internal/watchdog/worker"
)

// fuzzEnv is one exchange environment per test process, as a Watchdog makes
// it (watchdog.New) but with no workers started: the targets use its config,
// metrics, logger and pool bookkeeping, and supply the worker themselves.
var fuzzEnv = sync.OnceValues(func() (*Env, error) {
	cfg, err := config.ParseConfig([]string{"--", "true"}, func(string) string { return "" }, io.Discard)
	if err != nil {
		return nil, err
	}
	cfg.Workers = 1
	log := obs.NewLogger(io.Discard, false)
	p := pool.New(&cfg, log)
	spill := &buffer.SpillBudget{Max: cfg.BufferSpillMax}
	bufs := buffer.NewRespBuffers(&cfg, spill, log)
	m := obs.NewMetrics(p, bufs)
	p.SetMetrics(m)
	return &Env{Cfg: &cfg, Log: log, M: m, Pool: p, Buffers: bufs,
		Fail: func(rw http.ResponseWriter, t wire.ErrorType, e *obs.AccessEntry) {
			status, n := wire.WriteError(rw, t, e.RequestID)
			e.Status, e.Bytes = status, int64(n)
		}}, nil
})

func fuzzEnvironment(tb testing.TB) *Env {
	env, err := fuzzEnv()
	if err != nil {
		tb.Fatal(err)
	}
	return env
}

// fakeWorker is a worker on real pipes with no process: dead is set so that kill never
// signals a process group (its pid is 0). The test plays the worker's side of the pipes.
func fakeWorker(tb testing.TB, p *pool.Pool) (w *pool.Member, reqR, respW *os.File) {
	reqR, reqW, err := os.Pipe()
	if err != nil {
		tb.Fatal(err)
	}
	respR, respW, err := os.Pipe()
	if err != nil {
		tb.Fatal(err)
	}
	pw := worker.New(1, reqW, reqR, respR)
	pw.Dead = true
	w = p.Hold(pw)
	tb.Cleanup(func() { p.Unhold(w) }) // its exchange's end put it in the idle list
	return w, reqR, respW
}

// ---- response reading

// fuzzRequestID is the request id of every fuzzed exchange (§5.1).
const fuzzRequestID = "fuzz-request-id"

// staleResponse is what a misbehaving worker might leave after its response: a whole
// second response that must never reach a client (§9.6).
const staleResponse = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nstale"

// respOutcome is what one exchange did with a worker's response.
type respOutcome struct {
	kind    string // forwarded, error (a §8.1 answer), aborted (§8.7)
	reason  string // restart reason (§9.1), or "" when the worker is kept
	status  int
	header  http.Header
	body    []byte
	trailer http.Header
}

// maxFuzzResponse keeps a response within a pipe's capacity, so the fake worker's
// single write never waits for the watchdog to read.
const maxFuzzResponse = 60 << 10

// exchangeResponse runs one exchange (exchange.run) whose worker reads the request and
// answers with resp, then exits (closes the response pipe).
func exchangeResponse(t *testing.T, env *Env, method string, resp []byte) respOutcome {
	t.Helper()
	w, reqR, respW := fakeWorker(t, env.Pool)
	defer w.ClosePipes()
	var reqBody io.Reader
	if method == http.MethodPost {
		reqBody = strings.NewReader("hello")
	}
	r := httptest.NewRequest(method, "/fuzz", reqBody)
	workerDone := make(chan error, 1)
	go func() {
		// The worker reads the whole request first, as a library does, so the
		// exchange is never the §9.3 "never read" case.
		defer respW.Close()
		q, err := http.ReadRequest(bufio.NewReader(reqR))
		if err == nil {
			_, err = io.Copy(io.Discard, q.Body)
		}
		if err == nil {
			_, err = respW.Write(resp)
		}
		workerDone <- err
	}()
	rec := httptest.NewRecorder()
	x := &Exchange{
		env: env, w: w, l: w.First(), rw: rec, rc: http.NewResponseController(rec), r: r,
		id: fuzzRequestID, target: "/fuzz",
		// A deadline no input reaches: an exchange that hangs fails as "timeout".
		deadline: time.Now().Add(time.Minute),
		entry:    &obs.AccessEntry{RequestID: fuzzRequestID}, body: r.Body,
	}
	out := respOutcome{kind: "forwarded"}
	func() {
		defer func() {
			if v := recover(); v != nil {
				if v != http.ErrAbortHandler {
					panic(v)
				}
				out.kind = "aborted" // §8.7: the client's response is cut short
			}
		}()
		if x.Run() {
			t.Fatalf("run reported a request the worker never read; it read the whole request")
		}
	}()
	if err := <-workerDone; err != nil {
		t.Fatalf("fake worker: %v", err)
	}
	if r, ok := w.RetiredReason(); ok {
		out.reason = string(r)
	} else {
		// Kept: the §9.6 check that acquire makes before the next request
		// (pool.usable), now that the worker has written and exited.
		out.reason = string(env.Pool.IdleCheck(w.First()))
	}
	res := rec.Result()
	// The Date the watchdog adds (as net/http would) is the clock's, not the worker's.
	res.Header.Del("Date")
	out.status, out.header, out.trailer = res.StatusCode, res.Header, res.Trailer
	out.body = rec.Body.Bytes()
	if out.kind == "forwarded" && slices.Contains([]string{"bad_response", "crashed", "timeout"}, out.reason) {
		out.kind = "error"
	}
	return out
}

func FuzzResponse(f *testing.F) {
	for _, s := range responseSeeds {
		for m := range uint8(3) {
			f.Add([]byte(s), m)
		}
	}
	f.Fuzz(func(t *testing.T, resp []byte, m uint8) {
		if len(resp)+len(staleResponse) > maxFuzzResponse {
			return
		}
		method := []string{http.MethodGet, http.MethodHead, http.MethodPost}[m%3]
		env := fuzzEnvironment(t)
		got := exchangeResponse(t, env, method, resp)
		checkResponseOutcome(t, method, resp, got)
		if got.kind != "forwarded" {
			return
		}
		// Bytes after a complete response are never part of it: the same response
		// followed by a stale one is forwarded identically, and the worker is
		// replaced before another request can read the rest (§9.6).
		withStale := append(slices.Clip(resp), staleResponse...)
		again := exchangeResponse(t, env, method, withStale)
		checkResponseOutcome(t, method, withStale, again)
		if again.kind != "forwarded" || again.status != got.status || !bytes.Equal(again.body, got.body) ||
			!reflect.DeepEqual(again.header, got.header) || !reflect.DeepEqual(again.trailer, got.trailer) {
			t.Fatalf("%s %q: forwarded %d %v %q; followed by a stale response: %s %d %v %q",
				method, resp, got.status, got.header, got.body, again.kind, again.status, again.header, again.body)
		}
		if again.reason != "unsolicited_output" {
			t.Fatalf("%s %q followed by a stale response: worker restart reason %q; want unsolicited_output (§9.6)",
				method, resp, again.reason)
		}
	})
}

// checkResponseOutcome checks the properties every exchange has, whatever the worker
// wrote: PROTOCOL.md §4.4, §8.4, §8.5, §8.7.
func checkResponseOutcome(t *testing.T, method string, resp []byte, got respOutcome) {
	t.Helper()
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf("%s, worker wrote %q: %s (got %s %d %v %q, restart reason %q)", method, resp,
			fmt.Sprintf(format, args...), got.kind, got.status, got.header, got.body, got.reason)
	}
	switch got.kind {
	case "error":
		// §8.4, §8.5: nothing was sent yet; the watchdog answers with §8.1. A worker
		// that ends without a whole response has crashed; anything else is malformed.
		want := map[string]string{"bad_response": "bad_response", "crashed": "worker_crashed"}[got.reason]
		if want == "" || got.status != http.StatusBadGateway || got.header.Get("AfterBurn-Error") != want {
			fail("want a 502 %s error for restart reason %q", want, got.reason)
		}
		var eb wire.ErrorBody
		if err := json.Unmarshal(got.body, &eb); err != nil || string(eb.Type) != want || eb.RequestID != fuzzRequestID {
			fail("error body %q: want the §8.1 body of %s", got.body, want)
		}
		return
	case "aborted":
		if got.reason != "bad_response" && got.reason != "crashed" {
			fail("aborted after the head with restart reason %q; want bad_response or crashed", got.reason)
		}
	case "forwarded":
		switch got.reason {
		case "", "exited", "unsolicited_output", "worker_closed":
		default:
			fail("forwarded, then restart reason %q", got.reason)
		}
	}
	// The head reached the client: it carries no hop-by-hop field, none the worker's
	// Connection named, no reserved field but AfterBurn-Error and the watchdog's own
	// AfterBurn-Request-Id (§4.4, §5.4), and nothing that could split it.
	named := map[string]bool{}
	if q, err := http.ReadResponse(bufio.NewReader(bytes.NewReader(resp)), &http.Request{Method: method}); err == nil {
		named = wire.ConnectionFields(q.Header)
	}
	// net/http writes the keys as they are in the map; compare them canonical.
	canon := func(h http.Header) http.Header {
		c := http.Header{}
		for k, vv := range h {
			if len(vv) > 0 { // a key with no value is not written (Content-Type: nil)
				c[http.CanonicalHeaderKey(k)] = append(c[http.CanonicalHeaderKey(k)], vv...)
			}
		}
		return c
	}
	got.header, got.trailer = canon(got.header), canon(got.trailer)
	checkFields := func(what string, h http.Header) {
		for k, vv := range h {
			if !validToken(k) {
				// http.ReadResponse lets a space into a field name (go.dev/issue/34540);
				// forward copies it, and net/http's server drops a field whose name is
				// not a token when it writes the head (Header.writeSubset), so it never
				// reaches the client. The recorder keeps it: skip it here.
				continue
			}
			for _, v := range vv {
				if strings.ContainsAny(v, "\r\n\x00") {
					fail("%s %s: %q holds CR, LF or NUL", what, k, v)
				}
			}
			switch {
			case k == "Transfer-Encoding" && what == "field" && slices.Equal(vv, []string{"chunked"}):
				// the watchdog's own framing toward the client
			case fuzzHopByHop[k], named[k] && k != "Afterburn-Request-Id" && k != "Content-Length":
				fail("%s %s: %q is hop-by-hop (§5.4)", what, k, vv)
			case what == "trailer" && !fuzzTrailerAllowed(k):
				fail("trailer %s: %q must not be a trailer (§6.7)", k, vv)
			case strings.HasPrefix(k, "Afterburn-") && !(what == "field" && (k == "Afterburn-Error" || k == "Afterburn-Request-Id")):
				fail("%s %s: %q is reserved (§4.4)", what, k, vv)
			}
		}
	}
	checkFields("field", got.header)
	checkFields("trailer", got.trailer)
	if id := got.header["Afterburn-Request-Id"]; !slices.Equal(id, []string{fuzzRequestID}) {
		fail("AfterBurn-Request-Id %q; want the watchdog's %q (§5.1)", id, fuzzRequestID)
	}
	if got.kind == "forwarded" {
		if cl := got.header["Content-Length"]; len(cl) > 0 && method != http.MethodHead &&
			got.status != http.StatusNoContent && got.status != http.StatusNotModified && cl[0] != strconv.Itoa(len(got.body)) {
			fail("Content-Length %q but %d body bytes", cl, len(got.body))
		}
	}
}

// fuzzHopByHop is the list of PROTOCOL.md §5.4, written out again rather than taken
// from the code under test.
var fuzzHopByHop = map[string]bool{
	"Connection": true, "Keep-Alive": true, "Proxy-Connection": true, "Proxy-Authenticate": true,
	"Proxy-Authorization": true, "Te": true, "Transfer-Encoding": true, "Upgrade": true,
}

// fuzzTrailerAllowed is PROTOCOL.md §6.7's rule for trailer fields, written out
// again: not framing, routing, authentication, request modifiers, response
// control data, Content-*, Trailer, hop-by-hop or reserved (RFC 9110 §6.5.1).
func fuzzTrailerAllowed(k string) bool {
	switch k {
	case "Transfer-Encoding", "Content-Length", "Trailer", "Host", "Authorization", "Proxy-Authorization",
		"Proxy-Authenticate", "Www-Authenticate", "Authentication-Info", "Proxy-Authentication-Info",
		"Cookie", "Set-Cookie", "Cache-Control", "Expect", "Max-Forwards", "Pragma", "Range", "Te",
		"If-Match", "If-None-Match", "If-Modified-Since", "If-Unmodified-Since", "If-Range",
		"Age", "Expires", "Date", "Location", "Retry-After", "Vary",
		"Connection", "Keep-Alive", "Proxy-Connection", "Upgrade":
		return false
	}
	return !strings.HasPrefix(k, "Content-") && !strings.HasPrefix(k, "Afterburn-")
}

func validToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' ||
			strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0) {
			return false
		}
	}
	return true
}

// responseSeeds are responses a worker may write, well-formed or not.
var responseSeeds = []string{
	// §4.5's example.
	"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n7\r\n{\"ok\":1\r\n1\r\n}\r\n0\r\n\r\n",
	"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello",
	"HTTP/1.1 200 \r\nContent-Length: 0\r\n\r\n",
	"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhel",
	"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhelloNOT HTTP AT ALL\r\n",
	"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTrailer: X-Sum\r\n\r\n5\r\nhello\r\n0\r\nX-Sum: 1\r\nAfterBurn-Secret: s\r\nConnection: x\r\n\r\n",
	"HTTP/1.1 200 OK\r\nConnection: X-T\r\nTransfer-Encoding: chunked\r\n\r\n1\r\na\r\n0\r\nX-T: 1\r\n\r\n",
	"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n",
	"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n0\r\n\r\n",
	"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n",
	"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
	"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello!",
	"HTTP/1.1 200 OK\r\n\r\nclose-delimited",
	"HTTP/1.1 204 No Content\r\n\r\n",
	"HTTP/1.1 304 Not Modified\r\nContent-Length: 10\r\n\r\n",
	"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n",
	"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\r\n",
	"HTTP/1.1 500 Internal Server Error\r\nContent-Type: application/json\r\nAfterBurn-Error: handler_error\r\nContent-Length: 2\r\n\r\n{}",
	"HTTP/1.1 200 OK\r\nAfterBurn-Request-Id: forged\r\nAfterBurn-Timeout-Ms: 1\r\nContent-Length: 0\r\n\r\n",
	"HTTP/1.1 200 OK\r\nConnection: close, X-Hop\r\nX-Hop: 1\r\nKeep-Alive: 5\r\nProxy-Authenticate: x\r\nUpgrade: h2c\r\nTE: trailers\r\nContent-Length: 0\r\n\r\n",
	"HTTP/1.1 200 OK\r\nSet-Cookie: a=1\r\nSet-Cookie: b=2\r\nContent-Length: 0\r\n\r\n",
	"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok",
	"HTTP/1.1 200 OK\nContent-Length: 2\n\nok",
	"HTTP/1.1 200 OK\r\nX-Fold: a\r\n b\r\nContent-Length: 0\r\n\r\n",
	"HTTP/1.1 200 OK\r\nX-Bad\x00: a\r\nContent-Length: 0\r\n\r\n",
	"HTTP/1.1 2000 OK\r\nContent-Length: 0\r\n\r\n",
	"HTTP/1.1 099 Low\r\nContent-Length: 0\r\n\r\n",
	"HTTP/1.1 999 High\r\nContent-Length: 0\r\n\r\n",
	"NOT HTTP AT ALL\r\n\r\n",
	"",
	// The handshake reply, out of place (§3.2).
	"HTTP/1.1 200 OK\r\nAfterBurn-Protocol: 1\r\nContent-Length: 0\r\n\r\n",
}

// ---- request writing

// fuzzRequest builds, from fuzz inputs, a request as net/http's server could hand it
// to the watchdog: a token method, an origin-form target url.ParseRequestURI accepts,
// fields with token names and values without CTLs other than HTAB (httpguts'
// rules, trimmed as textproto trims them). It returns nil for inputs net/http would
// have refused.
func fuzzRequest(method, target, host string, fields []byte, body []byte, chunked bool, trailers []byte) *http.Request {
	if !validToken(method) || !strings.HasPrefix(target, "/") || strings.ContainsFunc(target, func(c rune) bool {
		return c <= ' ' || c == 0x7f
	}) {
		return nil
	}
	if _, err := url.ParseRequestURI(target); err != nil {
		return nil
	}
	for i := 0; i < len(host); i++ {
		if c := host[i]; !validToken(string(c)) && !strings.ContainsRune(":[]", rune(c)) {
			return nil
		}
	}
	r := httptest.NewRequest(method, "/", nil)
	r.RequestURI, r.Host = target, host
	r.URL, _ = url.ParseRequestURI(target)
	r.Header = fuzzFields(fields)
	delete(r.Header, "Host") // net/http moves it to r.Host
	if chunked {
		r.ContentLength = -1
		r.Trailer = fuzzFields(trailers)
		delete(r.Header, "Trailer") // net/http makes the names it declares r.Trailer's keys
	} else {
		r.ContentLength = int64(len(body))
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	return r
}

// fuzzFields reads "name: value" lines, keeping those net/http would accept.
func fuzzFields(b []byte) http.Header {
	h := http.Header{}
	for _, line := range strings.Split(string(b), "\n") {
		name, value, ok := strings.Cut(line, ":")
		if !ok || !validToken(name) {
			continue
		}
		value = strings.Trim(value, " \t")
		if strings.ContainsFunc(value, func(c rune) bool { return c < ' ' && c != '\t' || c == 0x7f }) {
			continue
		}
		h.Add(name, value) // canonical, as textproto makes it
	}
	return h
}

// pieceReader returns the body in the pieces the client's reads could give: sizes
// from the fuzz input, zero-length reads included.
type pieceReader struct {
	data  []byte
	sizes []byte
}

func (p *pieceReader) Read(b []byte) (int, error) {
	if len(p.data) == 0 {
		return 0, io.EOF
	}
	n := len(p.data)
	if len(p.sizes) > 0 {
		n = min(n, int(p.sizes[0]))
		p.sizes = p.sizes[1:]
	}
	n = copy(b, p.data[:n])
	p.data = p.data[n:]
	return n, nil
}

// strictRequest is a request read back by strictParse.
type strictRequest struct {
	method, target string
	fields         [][2]string // in order, names as written
	body           []byte
	chunked        bool
	trailers       [][2]string
}

// strictParse reads one request under PROTOCOL.md §4.2 and the rules of §4.3 that the
// watchdog's output must meet, and requires the stream to end right after it.
func strictParse(b []byte) (*strictRequest, error) {
	rest := b
	line := func() (string, error) {
		i := bytes.Index(rest, []byte("\r\n"))
		if i < 0 {
			return "", errors.New("a line not ended by CRLF")
		}
		l := string(rest[:i])
		rest = rest[i+2:]
		if strings.ContainsAny(l, "\r\n") {
			return "", fmt.Errorf("bare CR or LF in %q", l) // rule 1
		}
		return l, nil
	}
	field := func(l string) ([2]string, error) {
		name, value, ok := strings.Cut(l, ":")
		switch {
		case !ok || !validToken(name):
			return [2]string{}, fmt.Errorf("field line %q: name not a token", l) // rules 3, 4
		case strings.ContainsFunc(value, func(c rune) bool { return c < ' ' && c != '\t' || c == 0x7f }):
			return [2]string{}, fmt.Errorf("field line %q: control character in the value", l) // rule 5
		}
		return [2]string{name, strings.Trim(value, " \t")}, nil
	}
	// fields reads field lines up to the empty line: a head's or a trailer section's.
	fields := func() ([][2]string, error) {
		var fs [][2]string
		for {
			l, err := line()
			if err != nil || l == "" {
				return fs, err
			}
			f, err := field(l)
			if err != nil {
				return nil, err
			}
			fs = append(fs, f)
		}
	}
	rl, err := line()
	if err != nil {
		return nil, err
	}
	parts := strings.Split(rl, " ")
	if len(parts) != 3 || !validToken(parts[0]) || parts[1] == "" || parts[2] != "HTTP/1.1" {
		return nil, fmt.Errorf("request line %q", rl) // rule 2
	}
	q := &strictRequest{method: parts[0], target: parts[1]}
	clen := int64(-1)
	head, err := fields()
	if err != nil {
		return nil, err
	}
	for _, f := range head {
		switch strings.ToLower(f[0]) {
		case "content-length":
			n, err := strconv.ParseInt(f[1], 10, 64)
			if err != nil || n < 0 || clen >= 0 || q.chunked {
				return nil, fmt.Errorf("Content-Length %q (rules 6, 7)", f[1])
			}
			clen = n
		case "transfer-encoding":
			if f[1] != "chunked" || clen >= 0 || q.chunked {
				return nil, fmt.Errorf("Transfer-Encoding %q (rules 7, 8)", f[1])
			}
			q.chunked = true
		}
		q.fields = append(q.fields, f)
	}
	switch {
	case clen >= 0:
		if int64(len(rest)) < clen {
			return nil, fmt.Errorf("%d body bytes; Content-Length %d", len(rest), clen)
		}
		q.body, rest = rest[:clen], rest[clen:]
	case q.chunked:
		q.body = []byte{}
		for {
			l, err := line()
			if err != nil {
				return nil, err
			}
			n, err := strconv.ParseUint(l, 16, 63)
			if err != nil || len(l) > 16 {
				return nil, fmt.Errorf("chunk size %q (rule 9)", l)
			}
			if n == 0 {
				break
			}
			if uint64(len(rest)) < n+2 || string(rest[n:n+2]) != "\r\n" {
				return nil, fmt.Errorf("chunk of %d bytes not followed by CRLF (rule 9)", n)
			}
			q.body, rest = append(q.body, rest[:n]...), rest[n+2:]
		}
		if q.trailers, err = fields(); err != nil {
			return nil, err
		}
	default:
		return nil, errors.New("neither Content-Length nor Transfer-Encoding (§4.2: every request is framed)")
	}
	if len(rest) > 0 {
		return nil, fmt.Errorf("%q after the request", rest)
	}
	return q, nil
}

// writeRequest runs writeHead and sendBody as exchange.run does, against a pipe, and
// returns every byte written.
func writeRequest(t *testing.T, env *Env, r *http.Request, body io.Reader, deadline time.Time) []byte {
	t.Helper()
	w, reqR, respW := fakeWorker(t, env.Pool)
	defer w.ClosePipes()
	respW.Close()
	read := make(chan []byte, 1)
	go func() {
		b, _ := io.ReadAll(reqR)
		read <- b
	}()
	x := &Exchange{
		env: env, w: w, l: w.First(), r: r, id: fuzzRequestID, target: r.RequestURI,
		deadline: deadline, entry: &obs.AccessEntry{}, body: body,
		aborting: make(chan struct{}),
	}
	if err := x.writeHead(); err != nil {
		t.Fatalf("writeHead: %v", err)
	}
	if r.ContentLength != 0 {
		if bf := x.sendBody(); bf != BodyOK {
			t.Fatalf("sendBody: failure %d", bf)
		}
	}
	w.First().ReqW.Close()
	return <-read
}

func FuzzRequestWrite(f *testing.F) {
	for _, s := range requestSeeds(f) {
		f.Add(s.method, s.target, s.host, s.fields, s.body, s.chunked, s.trailers, []byte{3, 0, 200}, false)
	}
	f.Fuzz(func(t *testing.T, method, target, host string, fields, body []byte, chunked bool,
		trailers, pieces []byte, deadline bool) {
		if len(body) > 64<<10 {
			return // larger bodies only repeat the same chunk writes, more slowly
		}
		r := fuzzRequest(method, target, host, fields, body, chunked, trailers)
		if r == nil {
			return
		}
		var dl time.Time
		if deadline {
			dl = time.Now().Add(time.Hour)
		}
		out := writeRequest(t, fuzzEnvironment(t), r, &pieceReader{data: body, sizes: pieces}, dl)
		q, err := strictParse(out)
		if err != nil {
			t.Fatalf("the watchdog wrote %q: %v", out, err)
		}
		checkRoundTrip(t, r, body, dl, out, q)
	})
}

// checkRoundTrip compares what the worker reads with what the client sent (§4.2, §5).
func checkRoundTrip(t *testing.T, r *http.Request, body []byte, dl time.Time, out []byte, q *strictRequest) {
	t.Helper()
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf("the watchdog wrote %q: %s", out, fmt.Sprintf(format, args...))
	}
	if q.method != r.Method || q.target != r.RequestURI {
		fail("request line %s %s; want %s %s", q.method, q.target, r.Method, r.RequestURI)
	}
	if !bytes.Equal(q.body, body) {
		fail("body %q; want %q", q.body, body)
	}
	// §7.3: a head within max_header_bytes stays within the library's limit, which
	// allows 1024 bytes for the fields the watchdog adds.
	if n := bytes.Index(out, []byte("\r\n\r\n")) + 2; n > wire.HeadSize(r)+1024 {
		fail("a head of %d bytes for a client head of %d (§7.3 allows 1024 more)", n, wire.HeadSize(r))
	}
	if q.chunked != (r.ContentLength < 0) {
		fail("chunked %v for ContentLength %d", q.chunked, r.ContentLength)
	}
	// What the worker must see: every client field but the hop-by-hop ones, those
	// Connection names, the reserved ones, Expect, and the framing the watchdog
	// writes itself; each value on its own line in order (§4.2, §5.3, §5.4).
	named := map[string]bool{}
	for _, v := range r.Header["Connection"] {
		for _, tok := range strings.Split(v, ",") {
			named[http.CanonicalHeaderKey(strings.TrimSpace(tok))] = true
		}
	}
	drop := func(k string, conn map[string]bool) bool {
		return fuzzHopByHop[k] || conn[k] || strings.HasPrefix(k, "Afterburn-") ||
			k == "Expect" || k == "Content-Length" || k == "Host"
	}
	want := http.Header{}
	for k, vv := range r.Header {
		if !drop(k, named) {
			want[k] = vv
		}
	}
	if r.Trailer != nil && r.Header["Trailer"] == nil {
		// §6.7: the Trailer field names the trailers that are forwarded.
		var names []string
		for k := range r.Trailer {
			if fuzzTrailerAllowed(k) && !named[k] && validToken(k) {
				names = append(names, k)
			}
		}
		if len(names) > 0 {
			slices.Sort(names)
			want["Trailer"] = []string{strings.Join(names, ", ")}
		}
	}
	got := http.Header{}
	var hosts, ids, timeouts []string
	for _, f := range q.fields {
		k := http.CanonicalHeaderKey(f[0])
		switch {
		case k == "Host":
			hosts = append(hosts, f[1])
		case k == "Afterburn-Request-Id":
			ids = append(ids, f[1])
		case k == "Afterburn-Timeout-Ms":
			timeouts = append(timeouts, f[1])
		case k == "Content-Length" || k == "Transfer-Encoding":
			// framing, checked by strictParse
		case fuzzHopByHop[k] || strings.HasPrefix(k, "Afterburn-"):
			fail("field %s is hop-by-hop or reserved (§5.3, §5.4)", f[0])
		default:
			got[k] = append(got[k], f[1])
		}
	}
	wantHost := r.Host
	if wantHost == "" {
		wantHost = "localhost" // no connection address in a test request
	}
	if !slices.Equal(hosts, []string{wantHost}) {
		fail("Host %q; want exactly one, %q (§4.2)", hosts, wantHost)
	}
	if !slices.Equal(ids, []string{fuzzRequestID}) {
		fail("AfterBurn-Request-Id %q; want exactly one, %q (§5.1)", ids, fuzzRequestID)
	}
	if dl.IsZero() && len(timeouts) != 0 || !dl.IsZero() && (len(timeouts) != 1 || !isDigits(timeouts[0])) {
		fail("AfterBurn-Timeout-Ms %q with deadline %v (§5.2)", timeouts, dl)
	}
	if !reflect.DeepEqual(got, want) {
		fail("fields %q; want %q", got, want)
	}
	if q.chunked {
		gotT, wantT := http.Header{}, http.Header{}
		for _, f := range q.trailers {
			k := http.CanonicalHeaderKey(f[0])
			gotT[k] = append(gotT[k], f[1])
		}
		for k, vv := range r.Trailer {
			if !named[k] && fuzzTrailerAllowed(k) && len(vv) > 0 {
				wantT[k] = vv
			}
		}
		if !reflect.DeepEqual(gotT, wantT) {
			fail("trailers %q; want %q (§4.2)", gotT, wantT)
		}
	}
}

func isDigits(s string) bool {
	return s != "" && strings.Trim(s, "0123456789") == ""
}

type requestSeed struct {
	method, target, host string
	fields, body         []byte
	chunked              bool
	trailers             []byte
}

// requestSeeds turns every parse vector that net/http can read into a request for
// FuzzRequestWrite, plus a few written here.
func requestSeeds(f *testing.F) []requestSeed {
	seeds := []requestSeed{
		{"POST", "/orders?dry=1", "fn.example", []byte("Accept: application/json\nAccept-Language: en\nAccept-Language: fr;q=0.5"), []byte(`{"n":1}`), false, nil},
		{"PUT", "/up", "fn", []byte("Connection: keep-alive, X-Drop\nX-Drop: 1\nTE: trailers\nExpect: 100-continue\nAfterBurn-Request-Id: forged"), []byte("abc"), true, []byte("X-Sum: 1\nAfterBurn-X: 2\nContent-Length: 3")},
		{"GET", "/%zz?a=%00", "", []byte("X-Empty: \nX-Obs: caf\xe9\nX-Tab: a\tb"), nil, false, nil},
	}
	files, err := filepath.Glob("../../../../conformance/vectors/*.json")
	if err != nil {
		f.Fatal(err)
	}
	for _, name := range files {
		data, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		var vf struct {
			Vectors []struct {
				Kind    string `json:"kind"`
				Request []json.RawMessage
			} `json:"vectors"`
		}
		if filepath.Base(name) == "schema.json" || json.Unmarshal(data, &vf) != nil {
			continue
		}
		for _, v := range vf.Vectors {
			var raw []byte
			for _, seg := range v.Request {
				var s string
				if json.Unmarshal(seg, &s) != nil {
					raw = nil // a repeated segment: too big for a seed
					break
				}
				for _, c := range s {
					raw = append(raw, byte(c))
				}
			}
			if v.Kind != "parse" || raw == nil {
				continue
			}
			q, err := http.ReadRequest(bufio.NewReader(bytes.NewReader(raw)))
			if err != nil {
				continue
			}
			b, err := io.ReadAll(q.Body)
			if err != nil {
				continue
			}
			var fields, trailers strings.Builder
			q.Header.Write(&fields)
			q.Trailer.Write(&trailers)
			seeds = append(seeds, requestSeed{q.Method, q.RequestURI, q.Host,
				[]byte(strings.ReplaceAll(fields.String(), "\r\n", "\n")), b, q.ContentLength < 0,
				[]byte(strings.ReplaceAll(trailers.String(), "\r\n", "\n"))})
		}
	}
	return seeds
}

// TestTrailerNamedInConnectionNotForwarded pins a bug FuzzResponse found: a trailer
// field named in Connection is hop-by-hop like the head's fields (§5.4, "in either
// direction"), but the watchdog forwarded it, from the worker to the client and from
// the client to the worker.
func TestTrailerNamedInConnectionNotForwarded(t *testing.T) {
	env := fuzzEnvironment(t)
	got := exchangeResponse(t, env, http.MethodGet, []byte("HTTP/1.1 200 OK\r\nConnection: X-Hop\r\n"+
		"Transfer-Encoding: chunked\r\n\r\n1\r\na\r\n0\r\nX-Hop: 1\r\nX-Sum: 2\r\n\r\n"))
	if got.kind != "forwarded" || got.trailer.Get("X-Hop") != "" || got.trailer.Get("X-Sum") != "2" {
		t.Errorf("response: %s with trailers %v; want forwarded with X-Sum only", got.kind, got.trailer)
	}

	r := fuzzRequest("POST", "/t", "fn", []byte("Connection: X-Hop"), []byte("abc"), true, []byte("X-Hop: 1\nX-Sum: 2"))
	out := writeRequest(t, env, r, bytes.NewReader([]byte("abc")), time.Time{})
	q, err := strictParse(out)
	if err != nil {
		t.Fatalf("the watchdog wrote %q: %v", out, err)
	}
	if !slices.Equal(q.trailers, [][2]string{{"X-Sum", "2"}}) {
		t.Errorf("request trailers %q; want X-Sum only (written %q)", q.trailers, out)
	}
}
