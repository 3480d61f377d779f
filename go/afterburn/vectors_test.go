package afterburn

// The conformance vectors (conformance/vectors/*.json) are the single source of truth
// for request parsing; these tests read them in place, never a copy. Every vector of
// kind "parse" runs twice through the core — all bytes in one read, and one segment
// per read — and once through the serve loop with an echo handler, whose output is
// parsed back as HTTP responses.

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const vectorsDir = "../../conformance/vectors"

type vectorFile struct {
	Group   string   `json:"group"`
	Vectors []vector `json:"vectors"`
}

type vector struct {
	ID          string            `json:"id"`
	Section     string            `json:"section"`
	Level       string            `json:"level"`
	Kind        string            `json:"kind"`
	Description string            `json:"description"`
	Env         map[string]string `json:"env"`
	Handshake   *bool             `json:"handshake"`
	Request     []segment         `json:"request"`
	ClosePipe   bool              `json:"close_request_pipe"`
	Expect      []expectation     `json:"expect"`
}

// A segment is a latin-1 string (each character one byte) or {"repeat","times"}.
type segment []byte

func (s *segment) UnmarshalJSON(b []byte) error {
	var str string
	if err := json.Unmarshal(b, &str); err == nil {
		*s, err = latin1(str)
		return err
	}
	var rep struct {
		Repeat string `json:"repeat"`
		Times  int    `json:"times"`
	}
	if err := json.Unmarshal(b, &rep); err != nil {
		return err
	}
	one, err := latin1(rep.Repeat)
	*s = bytes.Repeat(one, rep.Times)
	return err
}

func latin1(s string) ([]byte, error) {
	b := make([]byte, 0, len(s))
	for _, r := range s {
		if r > 0xff {
			return nil, fmt.Errorf("segment character %U is not latin-1", r)
		}
		b = append(b, byte(r))
	}
	return b, nil
}

type expectation struct {
	Echo          *echoExpect   `json:"echo"`
	AbsentHeaders []string      `json:"absent_headers"`
	Reject        *rejectExpect `json:"reject"`
}

type echoExpect struct {
	Method    *string     `json:"method"`
	Path      *string     `json:"path"`
	Query     *string     `json:"query"`
	Headers   [][2]string `json:"headers"`
	Trailers  [][2]string `json:"trailers"`
	BodyB64   *string     `json:"body_b64"`
	BodyLen   *int        `json:"body_len"`
	RequestID *string     `json:"request_id"`
}

type rejectExpect struct {
	Status  int         `json:"status"`
	Type    string      `json:"type"`
	Headers [][2]string `json:"headers"`
}

// loadVectors returns every vector of the given kind. It fails the test when the
// folder holds vector files but no vector of that kind could be read.
func loadVectors(t testing.TB, kind string) []vector {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(vectorsDir, "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	var out []vector
	n := 0
	for _, f := range files {
		if filepath.Base(f) == "schema.json" {
			continue
		}
		n++
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var vf vectorFile
		if err := json.Unmarshal(data, &vf); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for _, v := range vf.Vectors {
			if v.Kind == kind {
				out = append(out, v)
			}
		}
	}
	if n == 0 {
		t.Skipf("no vector files in %s yet", vectorsDir)
	}
	if len(out) == 0 {
		t.Fatalf("%d vector files in %s but no %q vectors", n, vectorsDir, kind)
	}
	return out
}

// baseEnv is the environment the conformance suite's wire layer gives every fixture
// before a vector's own env: a watchdog with default limits (PROTOCOL.md §2.3, §7.1,
// §7.2). Vectors such as limits/body-max-int63-over-default-limit depend on it.
var baseEnv = map[string]string{
	"AFTERBURN_MAX_HEADER_BYTES": "32768",
	"AFTERBURN_MAX_BODY_BYTES":   "67108864",
}

func (v *vector) limits(t *testing.T) limits {
	lim, err := limitsFromEnv(func(k string) (string, bool) {
		if s, ok := v.Env[k]; ok {
			return s, ok
		}
		s, ok := baseEnv[k]
		return s, ok
	})
	if err != nil {
		t.Fatal(err)
	}
	return lim
}

func (v *vector) bytes() []byte { return bytes.Join(sliceOf(v.Request), nil) }

func sliceOf(segs []segment) [][]byte {
	out := make([][]byte, len(segs))
	for i, s := range segs {
		out[i] = s
	}
	return out
}

// segmentReader returns one segment (or what fits of it) per Read, then io.EOF.
type segmentReader struct{ segs [][]byte }

func (r *segmentReader) Read(p []byte) (int, error) {
	for len(r.segs) > 0 && len(r.segs[0]) == 0 {
		r.segs = r.segs[1:]
	}
	if len(r.segs) == 0 {
		return 0, io.EOF
	}
	n := copy(p, r.segs[0])
	r.segs[0] = r.segs[0][n:]
	return n, nil
}

// echo is the fixture's echo format (conformance/README.md), as the core presents a
// request.
type echo struct {
	Method    string      `json:"method"`
	Path      string      `json:"path"`
	Query     string      `json:"query"`
	Headers   [][2]string `json:"headers"`
	Trailers  [][2]string `json:"trailers"`
	BodyB64   string      `json:"body_b64"`
	BodyLen   int         `json:"body_len"`
	RequestID string      `json:"request_id"`
}

// sortedKeys returns the names of h in order. (slices.Sorted(maps.Keys(h)) needs Go 1.23;
// the module's go directive is 1.22, go.mod.)
func sortedKeys(h http.Header) []string {
	keys := make([]string, 0, len(h))
	for k := range h {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func fieldList(h http.Header) [][2]string {
	out := [][2]string{}
	for _, k := range sortedKeys(h) {
		for _, v := range h[k] {
			out = append(out, [2]string{strings.ToLower(k), v})
		}
	}
	return out
}

func makeEcho(r *http.Request, body []byte) echo {
	path, query, _ := strings.Cut(r.RequestURI, "?")
	headers := append([][2]string{{"host", r.Host}}, fieldList(r.Header)...)
	return echo{
		Method: r.Method, Path: path, Query: query,
		Headers: headers, Trailers: fieldList(r.Trailer),
		BodyB64: base64.StdEncoding.EncodeToString(body), BodyLen: len(body),
		RequestID: RequestID(r),
	}
}

// compareFields matches per name (conformance/README.md, "Field lists").
func compareFields(what string, got, want [][2]string) error {
	names := map[string]bool{}
	for _, f := range want {
		names[f[0]] = true
	}
	for name := range names {
		var g, w []string
		for _, f := range got {
			if f[0] == name {
				g = append(g, f[1])
			}
		}
		for _, f := range want {
			if f[0] == name {
				w = append(w, f[1])
			}
		}
		if !slices.Equal(g, w) {
			return fmt.Errorf("%s %q: got %q; want %q", what, name, g, w)
		}
	}
	return nil
}

func (e *expectation) checkEcho(got echo) error {
	w := e.Echo
	var errs []error
	check := func(name string, g, want any) {
		if fmt.Sprint(g) != fmt.Sprint(want) {
			errs = append(errs, fmt.Errorf("%s: got %q; want %q", name, g, want))
		}
	}
	if w.Method != nil {
		check("method", got.Method, *w.Method)
	}
	if w.Path != nil {
		check("path", got.Path, *w.Path)
	}
	if w.Query != nil {
		check("query", got.Query, *w.Query)
	}
	if w.BodyB64 != nil {
		check("body_b64", got.BodyB64, *w.BodyB64)
	}
	if w.BodyLen != nil {
		check("body_len", got.BodyLen, *w.BodyLen)
	}
	if w.RequestID != nil {
		check("request_id", got.RequestID, *w.RequestID)
	}
	if w.Headers != nil {
		errs = append(errs, compareFields("header", got.Headers, w.Headers))
	}
	if w.Trailers != nil {
		errs = append(errs, compareFields("trailer", got.Trailers, w.Trailers))
		if len(w.Trailers) == 0 && len(got.Trailers) != 0 {
			errs = append(errs, fmt.Errorf("trailers: got %q; want none", got.Trailers))
		}
	}
	for _, name := range e.AbsentHeaders {
		for _, f := range got.Headers {
			if f[0] == name {
				errs = append(errs, fmt.Errorf("header %q present; want absent", name))
			}
		}
	}
	return errors.Join(errs...)
}

// runCore feeds a vector to the core with no handler: readRequest, then the whole body.
func runCore(t *testing.T, v *vector, r io.Reader) {
	t.Helper()
	c := newConn(r, io.Discard, v.limits(t))
	for i, e := range v.Expect {
		ex, err := c.readRequest()
		var body []byte
		if err == nil {
			body, err = io.ReadAll(ex.req.Body)
		}
		if e.Reject != nil {
			var perr *protocolError
			if !errors.As(err, &perr) {
				t.Fatalf("response %d: got err %v; want a parse error %d %s", i, err, e.Reject.Status, e.Reject.Type)
			}
			if perr.status != e.Reject.Status || perr.typ != e.Reject.Type {
				t.Fatalf("response %d: got parse error %d %s (%v); want %d %s", i, perr.status, perr.typ, perr, e.Reject.Status, e.Reject.Type)
			}
			if i != len(v.Expect)-1 {
				t.Fatalf("vector expects responses after a reject")
			}
			return
		}
		if err != nil {
			t.Fatalf("response %d: got error %v; want an echo", i, err)
		}
		if ex.isHandshake {
			t.Fatalf("response %d: a parse vector made a handshake", i)
		}
		if err := e.checkEcho(makeEcho(ex.req, body)); err != nil {
			t.Fatalf("response %d: %v", i, err)
		}
		ex.cancel()
	}
}

func TestVectorsParse(t *testing.T) {
	for _, v := range loadVectors(t, "parse") {
		t.Run(v.ID, func(t *testing.T) {
			t.Run("one-read", func(t *testing.T) { runCore(t, &v, bytes.NewReader(v.bytes())) })
			t.Run("read-per-segment", func(t *testing.T) {
				runCore(t, &v, &segmentReader{segs: sliceOf(cloneSegments(v.Request))})
			})
		})
	}
}

func cloneSegments(segs []segment) []segment {
	out := make([]segment, len(segs))
	for i, s := range segs {
		out[i] = slices.Clone(s)
	}
	return out
}

// echoHandler is the fixture's echo route, for tests of the serve loop.
var echoHandler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusTeapot) // never sent: the library answers the framing error
		return
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(makeEcho(r, body))
})

// TestVectorsServe runs every parse vector through the serve loop and reads the
// responses back as a watchdog would.
func TestVectorsServe(t *testing.T) {
	for _, v := range loadVectors(t, "parse") {
		t.Run(v.ID, func(t *testing.T) {
			var out bytes.Buffer
			c := newConn(&segmentReader{segs: sliceOf(cloneSegments(v.Request))}, &out, v.limits(t))
			var logs bytes.Buffer
			c.log = &logs
			serveErr := c.serve(echoHandler)
			br := bufio.NewReader(&out)
			rejected := checkVectorResponses(t, &v, br, func() string { return fmt.Sprintf("serve returned %v", serveErr) })
			if rest, _ := io.ReadAll(br); len(rest) > 0 {
				t.Fatalf("unexpected bytes after the responses: %q", rest)
			}
			if rejected && serveErr == nil {
				t.Fatalf("serve returned nil after a reject; want an error")
			}
			if !rejected && serveErr != nil {
				t.Fatalf("serve: %v; want nil at the end of the requests", serveErr)
			}
		})
	}
}

// checkVectorResponses reads the responses v expects from br, as a watchdog would,
// and reports whether the last one was a rejection (§8.8). context adds to a failure
// message what the caller knows, such as what serve returned.
func checkVectorResponses(t *testing.T, v *vector, br *bufio.Reader, context func() string) (rejected bool) {
	t.Helper()
	for i, e := range v.Expect {
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("response %d: %v (%s)", i, err, context())
		}
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatalf("response %d body: %v", i, err)
		}
		if e.Reject != nil {
			var eb errorBody
			json.Unmarshal(body, &eb)
			if resp.StatusCode != e.Reject.Status || eb.Type != e.Reject.Type ||
				resp.Header.Get("AfterBurn-Error") != e.Reject.Type ||
				!strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
				t.Fatalf("response %d: got %d %s %q; want a %d %s error", i, resp.StatusCode, resp.Header, body, e.Reject.Status, e.Reject.Type)
			}
			if err := compareFields("header", fieldList(resp.Header), e.Reject.Headers); err != nil {
				t.Fatalf("response %d: %v", i, err)
			}
			rejected = true
			continue
		}
		rejected = false
		if resp.StatusCode != 200 {
			t.Fatalf("response %d: got status %d %q; want 200", i, resp.StatusCode, body)
		}
		var got echo
		if err := json.Unmarshal(body, &got); err != nil {
			t.Fatalf("response %d: %v in %q", i, err, body)
		}
		if err := e.checkEcho(got); err != nil {
			t.Fatalf("response %d: %v", i, err)
		}
	}
	return rejected
}
