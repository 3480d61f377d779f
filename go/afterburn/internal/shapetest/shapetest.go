// Package shapetest reads the handler-shape vectors of conformance/shapes/ (PROTOCOL.md §13)
// for the tests of the Go adapters, which are modules of their own under go/afterburn/: it
// builds each case's request, matches an event as a subset ("$any", "$absent") and checks a
// written response, as conformance/shapes/README.md says a case reads.
package shapetest

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// Case is one case of a shape file; Event, Result and Response are kept as JSON.
type Case struct {
	ID          string          `json:"id"`
	Description string          `json:"description"`
	Request     Request         `json:"request"`
	Event       json.RawMessage `json:"event"`
	Result      json.RawMessage `json:"result"` // "null" for a result of nothing; nil when the case has none
	Response    json.RawMessage `json:"response"`
	Context     *struct {
		AWSRequestID   string `json:"awsRequestId"`
		RemainingMinMS int64  `json:"remaining_min_ms"`
		RemainingMaxMS int64  `json:"remaining_max_ms"`
	} `json:"context"`
	Error string `json:"error"`
}

// Request is the HTTP request a case's adapter is given.
type Request struct {
	Method    string      `json:"method"`
	Target    string      `json:"target"`
	Headers   [][2]string `json:"headers"`
	Body      *string     `json:"body"`
	BodyB64   *string     `json:"body_b64"`
	RequestID string      `json:"request_id"`
	TimeoutMS *int64      `json:"timeout_ms"`
}

// Response is what an adapter must write.
type Response struct {
	Status  int         `json:"status"`
	Headers [][2]string `json:"headers"`
	Body    *string     `json:"body"`
	BodyB64 *string     `json:"body_b64"`
}

// Dir is conformance/shapes of this checkout.
func Dir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..", "..", "conformance", "shapes")
}

// Load reads conformance/shapes/<shape>.json and checks that it is that shape's file.
func Load(t testing.TB, shape string) []Case {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(Dir(), shape+".json"))
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Shape string `json:"shape"`
		Cases []Case `json:"cases"`
	}
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatalf("%s.json: %v", shape, err)
	}
	if f.Shape != shape || len(f.Cases) == 0 {
		t.Fatalf("%s.json: shape %q with %d cases", shape, f.Shape, len(f.Cases))
	}
	return f.Cases
}

// BodyBytes returns the request's body bytes.
func (r Request) BodyBytes(t testing.TB) []byte {
	if r.BodyB64 != nil {
		b, err := base64.StdEncoding.DecodeString(*r.BodyB64)
		if err != nil {
			t.Fatalf("body_b64: %v", err)
		}
		return b
	}
	if r.Body != nil {
		return []byte(*r.Body)
	}
	return nil
}

// HTTP builds the request as the library hands it to a handler: Host in r.Host, every
// other field in r.Header in order, the deadline of timeout_ms on the context. The
// request id is the caller's to pass (RequestID).
func (r Request) HTTP(t testing.TB) *http.Request {
	t.Helper()
	req := httptest.NewRequest(r.Method, r.Target, bytes.NewReader(r.BodyBytes(t)))
	req.Host = ""
	for _, kv := range r.Headers {
		if kv[0] == "host" {
			req.Host = kv[1]
			continue
		}
		req.Header.Add(kv[0], kv[1])
	}
	req.RemoteAddr = "" // the worker is not on the network
	if r.TimeoutMS != nil {
		ctx, cancel := context.WithTimeout(req.Context(), time.Duration(*r.TimeoutMS)*time.Millisecond)
		t.Cleanup(cancel)
		req = req.WithContext(ctx)
	}
	return req
}

// Subset reports where got, a JSON value, fails to match want as the README says: every
// key of a want object present in got with a matching value ("$any": present; "$absent":
// missing or null), arrays and scalars equal. It returns "" on a match.
func Subset(want, got json.RawMessage) string {
	var w, g any
	if err := unmarshal(want, &w); err != nil {
		return "want: " + err.Error()
	}
	if err := unmarshal(got, &g); err != nil {
		return "got: " + err.Error()
	}
	return subset("$", w, g, true)
}

func unmarshal(b []byte, v any) error {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	return d.Decode(v)
}

func subset(path string, want, got any, present bool) string {
	if s, ok := want.(string); ok {
		switch s {
		case "$any":
			if !present {
				return path + ": missing; want any value"
			}
			return ""
		case "$absent":
			if present && got != nil {
				return fmt.Sprintf("%s: %v; want it absent", path, got)
			}
			return ""
		}
	}
	if !present {
		return fmt.Sprintf("%s: missing; want %v", path, want)
	}
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return fmt.Sprintf("%s: %v; want an object", path, got)
		}
		for k, wv := range w {
			gv, ok := g[k]
			if d := subset(path+"."+k, wv, gv, ok); d != "" {
				return d
			}
		}
		return ""
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return fmt.Sprintf("%s: %v; want %v", path, got, want)
		}
		for i := range w {
			if d := subset(fmt.Sprintf("%s[%d]", path, i), w[i], g[i], true); d != "" {
				return d
			}
		}
		return ""
	default:
		if fmt.Sprint(want) != fmt.Sprint(got) || fmt.Sprintf("%T", want) != fmt.Sprintf("%T", got) {
			return fmt.Sprintf("%s: %v; want %v", path, got, want)
		}
		return ""
	}
}

// CheckResponse checks what an adapter wrote against the case: its response (status,
// headers as a subset, names case-insensitive and repeated names in order, the body
// exact) or its error (the §8.1 body's type, the status of §8.2, AfterBurn-Error).
func CheckResponse(t testing.TB, c Case, rec *httptest.ResponseRecorder) {
	t.Helper()
	got := rec.Result()
	body := rec.Body.Bytes()
	if c.Error != "" {
		status := map[string]int{"handler_error": 500, "bad_request": 400}[c.Error]
		var eb struct{ Type, Message, Request_ID string }
		if err := json.Unmarshal(body, &eb); err != nil || got.StatusCode != status || eb.Type != c.Error ||
			got.Header.Get("AfterBurn-Error") != c.Error || got.Header.Get("Content-Type") != "application/json" {
			t.Errorf("%s: got %d %v %q; want %d with the §8.1 body of type %s", c.ID, got.StatusCode, got.Header, body, status, c.Error)
		}
		return
	}
	var want Response
	if err := json.Unmarshal(c.Response, &want); err != nil {
		t.Fatalf("%s: response: %v", c.ID, err)
	}
	var wantBody []byte
	switch {
	case want.BodyB64 != nil:
		wantBody, _ = base64.StdEncoding.DecodeString(*want.BodyB64)
	case want.Body != nil:
		wantBody = []byte(*want.Body)
	}
	if got.StatusCode != want.Status || !bytes.Equal(body, wantBody) {
		t.Errorf("%s: got %d %q; want %d %q", c.ID, got.StatusCode, body, want.Status, wantBody)
	}
	seen := map[string]int{}
	for _, kv := range want.Headers {
		name := http.CanonicalHeaderKey(kv[0])
		vs := got.Header.Values(name)
		i := seen[name]
		seen[name]++
		if i >= len(vs) || vs[i] != kv[1] {
			t.Errorf("%s: header %s: got %q; want %q as value %d", c.ID, kv[0], vs, kv[1], i+1)
		}
	}
}

// Run runs each case in a subtest named after its id, without the shape's prefix.
func Run(t *testing.T, cases []Case, f func(t *testing.T, c Case)) {
	for _, c := range cases {
		_, name, _ := strings.Cut(c.ID, "/")
		t.Run(name, func(t *testing.T) { f(t, c) })
	}
}
