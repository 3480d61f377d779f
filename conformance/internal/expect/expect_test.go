package expect

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/afterburn-dev/afterburn/conformance/internal/vectors"
)

func TestFieldsPerName(t *testing.T) {
	got := vectors.Fields{{"host", "fn"}, {"accept", "a"}, {"x-other", "1"}, {"accept", "b"}, {"content-length", "0"}}
	for _, tc := range []struct {
		name string
		want vectors.Fields
		ok   bool
	}{
		{"subset in order", vectors.Fields{{"accept", "a"}, {"accept", "b"}}, true},
		{"other names not compared", vectors.Fields{{"host", "fn"}}, true},
		{"order across names not compared", vectors.Fields{{"x-other", "1"}, {"host", "fn"}}, true},
		{"case-insensitive names", vectors.Fields{{"Host", "fn"}}, true},
		{"nil compares nothing", nil, true},
		{"values out of order", vectors.Fields{{"accept", "b"}, {"accept", "a"}}, false},
		{"a value missing", vectors.Fields{{"accept", "a"}}, false},
		{"an extra value", vectors.Fields{{"accept", "a"}, {"accept", "b"}, {"accept", "c"}}, false},
		{"name absent", vectors.Fields{{"x-missing", ""}}, false},
		{"empty list means none", vectors.Fields{}, false},
		{"value differs", vectors.Fields{{"host", "other"}}, false},
	} {
		err := Fields("header", tc.want, got)
		if (err == nil) != tc.ok {
			t.Errorf("%s: got error %v; want ok=%v", tc.name, err, tc.ok)
		}
	}
	if err := Fields("trailer", vectors.Fields{}, nil); err != nil {
		t.Errorf("empty want and empty got: %v", err)
	}
}

func str(s string) *string { return &s }
func num(n int64) *int64   { return &n }

func echoResponse(t *testing.T, body map[string]any) *Response {
	t.Helper()
	b, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	return &Response{Status: 200, Header: vectors.Fields{{"content-type", "application/json"}}, Body: b}
}

func TestEcho(t *testing.T) {
	r := echoResponse(t, map[string]any{
		"method": "POST", "path": "/echo", "query": "", "request_id": "rid",
		"headers":  [][]string{{"host", "fn"}, {"content-length", "5"}, {"x-a", "1"}},
		"trailers": [][]string{},
		"body_b64": "aGVsbG8=", "body_len": 5,
	})
	ok := []struct {
		name   string
		want   vectors.Echo
		absent []string
	}{
		{"all fields", vectors.Echo{Method: str("POST"), Path: str("/echo"), Query: str(""), RequestID: str("rid"),
			Headers: vectors.Fields{{"host", "fn"}}, Trailers: vectors.Fields{}, BodyB64: str("aGVsbG8="), BodyLen: num(5)}, nil},
		{"fields not given are not compared", vectors.Echo{Method: str("POST")}, nil},
		{"absent header", vectors.Echo{}, []string{"afterburn-request-id"}},
	}
	for _, tc := range ok {
		if err := Echo(&tc.want, tc.absent, r); err != nil {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
	bad := []struct {
		name   string
		want   vectors.Echo
		absent []string
	}{
		{"method", vectors.Echo{Method: str("GET")}, nil},
		{"query", vectors.Echo{Query: str("a=1")}, nil},
		{"body", vectors.Echo{BodyB64: str("aGVsbG9v")}, nil},
		{"body_len", vectors.Echo{BodyLen: num(6)}, nil},
		{"request_id", vectors.Echo{RequestID: str("other")}, nil},
		{"header value", vectors.Echo{Headers: vectors.Fields{{"x-a", "2"}}}, nil},
		{"trailers must be empty", vectors.Echo{Trailers: vectors.Fields{{"x-t", "1"}}}, nil},
		{"present header", vectors.Echo{}, []string{"x-a"}},
	}
	for _, tc := range bad {
		if err := Echo(&tc.want, tc.absent, r); err == nil {
			t.Errorf("%s: got no error; want a mismatch", tc.name)
		}
	}
	r404 := *r
	r404.Status = 404
	if err := Echo(&vectors.Echo{}, nil, &r404); err == nil {
		t.Error("status 404: got no error")
	}
	missing := echoResponse(t, map[string]any{"method": "GET"})
	if err := Echo(&vectors.Echo{Path: str("/echo")}, nil, missing); err == nil {
		t.Error("echo lacking path: got no error")
	}
	if err := Echo(&vectors.Echo{}, nil, &Response{Status: 200, Body: []byte("not json")}); err == nil {
		t.Error("non-JSON echo: got no error")
	}
}

func TestReject(t *testing.T) {
	body := []byte(`{"type": "bad_request", "message": "the request is malformed", "request_id": "r"}`)
	good := &Response{Status: 400, Body: body, Header: vectors.Fields{
		{"afterburn-error", "bad_request"}, {"content-type", "application/json; charset=utf-8"}}}
	want := &vectors.Reject{Status: 400, Type: "bad_request"}
	if err := Reject(want, good); err != nil {
		t.Errorf("good reject: %v", err)
	}
	withHeader := &vectors.Reject{Status: 400, Type: "bad_request", Headers: vectors.Fields{{"afterburn-error", "bad_request"}}}
	if err := Reject(withHeader, good); err != nil {
		t.Errorf("reject with headers: %v", err)
	}
	for name, r := range map[string]*Response{
		"wrong status":        {Status: 431, Body: body, Header: good.Header},
		"wrong type":          {Status: 400, Body: []byte(`{"type": "timeout", "message": "m"}`), Header: good.Header},
		"no message":          {Status: 400, Body: []byte(`{"type": "bad_request"}`), Header: good.Header},
		"text/plain":          {Status: 400, Body: body, Header: vectors.Fields{{"content-type", "text/plain"}}},
		"not JSON":            {Status: 400, Body: []byte("400 Bad Request"), Header: good.Header},
		"body cut short":      {Status: 400, Body: body[:10], Header: good.Header, Incomplete: true},
		"missing error field": {Status: 400, Body: body, Header: vectors.Fields{{"content-type", "application/json"}}},
	} {
		w := want
		if name == "missing error field" {
			w = withHeader
		}
		if err := Reject(w, r); err == nil {
			t.Errorf("%s: got no error", name)
		}
	}
}

func TestCheck(t *testing.T) {
	status := func(n int) *int { return &n }
	yes, no := true, false
	r := &Response{Status: 200, Chunked: true, Body: []byte(`{"has_deadline": true, "remaining_ms": 4990, "n": {"a": [1]}}`),
		Header: vectors.Fields{{"set-cookie", "a=1"}, {"set-cookie", "b=2"}}}
	good := vectors.Response{Status: status(200), Chunked: &yes,
		Headers:       vectors.Fields{{"set-cookie", "a=1"}, {"set-cookie", "b=2"}},
		AbsentHeaders: []string{"afterburn-error"},
		JSON:          map[string]any{"has_deadline": true, "n": map[string]any{"a": []any{1}}},
		JSONRange:     map[string][2]float64{"remaining_ms": {3000, 5000}},
		BodyLen:       num(int64(len(r.Body)))}
	if err := Check(&good, r); err != nil {
		t.Errorf("good: %v", err)
	}
	for name, w := range map[string]vectors.Response{
		"status":        {Status: status(204)},
		"chunked":       {Chunked: &no},
		"header order":  {Headers: vectors.Fields{{"set-cookie", "b=2"}, {"set-cookie", "a=1"}}},
		"absent header": {AbsentHeaders: []string{"set-cookie"}},
		"json value":    {JSON: map[string]any{"has_deadline": false}},
		"json missing":  {JSON: map[string]any{"request_id": "x"}},
		"json range":    {JSONRange: map[string][2]float64{"remaining_ms": {0, 1000}}},
		"no body":       {NoBody: true},
		"incomplete":    {Incomplete: true},
		"body":          {BodyB64: str("")},
	} {
		if err := Check(&w, r); err == nil {
			t.Errorf("%s: got no error", name)
		}
	}
	cut := &Response{Status: 200, Body: []byte("partial"), Incomplete: true}
	if err := Check(&vectors.Response{Incomplete: true}, cut); err != nil {
		t.Errorf("incomplete wanted: %v", err)
	}
	if err := Check(&vectors.Response{}, cut); err == nil || !strings.Contains(err.Error(), "incomplete") {
		t.Errorf("incomplete not wanted: got %v", err)
	}
}

func TestHeaderFields(t *testing.T) {
	h := http.Header{"Set-Cookie": {"a", "b"}, "Content-Length": {"0"}}
	got := HeaderFields(h)
	want := vectors.Fields{{"content-length", "0"}, {"set-cookie", "a"}, {"set-cookie", "b"}}
	if len(got) != len(want) {
		t.Fatalf("got %v; want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("field %d: got %v; want %v", i, got[i], want[i])
		}
	}
}

func TestLists(t *testing.T) {
	want := vectors.Fields{{"afterburn-capabilities", "exchange"}}
	for _, c := range []struct {
		got vectors.Fields
		ok  bool
	}{
		{vectors.Fields{{"afterburn-capabilities", "exchange"}}, true},
		{vectors.Fields{{"AfterBurn-Capabilities", "exchange, streams"}}, true},
		{vectors.Fields{{"afterburn-capabilities", "streams ,exchange"}}, true},
		{vectors.Fields{{"afterburn-capabilities", "streams"}}, false},
		{vectors.Fields{{"afterburn-capabilities", "exchanges"}}, false},
		{vectors.Fields{}, false},
		{vectors.Fields{{"afterburn-capabilities", "exchange"}, {"afterburn-capabilities", "streams"}}, false},
	} {
		if err := Lists("header", want, c.got); (err == nil) != c.ok {
			t.Errorf("Lists(%v) = %v; want ok %v", c.got, err, c.ok)
		}
	}
}
