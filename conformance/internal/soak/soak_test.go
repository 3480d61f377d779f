package soak

import (
	"encoding/base64"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

func echoResp(path, id string, body []byte) (*http.Response, []byte) {
	b := `{"path":"` + path + `","request_id":"` + id + `","body_b64":"` + base64.StdEncoding.EncodeToString(body) + `"}`
	return &http.Response{StatusCode: 200, Header: http.Header{}}, []byte(b)
}

// TestCheckEchoCatchesMisdelivery: an echo of another request — by id, path or body — is a
// misdelivery, the one thing the soak exists to catch.
func TestCheckEchoCatchesMisdelivery(t *testing.T) {
	for _, c := range []struct {
		name       string
		path, id   string
		body       []byte
		wantPrefix string
	}{
		{"own", "/echo/tok", "id1", []byte("abc"), ""},
		{"other id", "/echo/tok", "id2", []byte("abc"), "misdelivered"},
		{"other path", "/echo/other", "id1", []byte("abc"), "misdelivered"},
		{"other body", "/echo/tok", "id1", []byte("abd"), "misdelivered"},
	} {
		resp, body := echoResp(c.path, c.id, c.body)
		got := checkEcho(resp, body, "id1", "tok", []byte("abc"))
		if (c.wantPrefix == "" && got != "") || !strings.HasPrefix(got, c.wantPrefix) {
			t.Errorf("%s: checkEcho = %q; want prefix %q", c.name, got, c.wantPrefix)
		}
	}
	if got := checkEcho(&http.Response{StatusCode: 502}, nil, "id1", "tok", nil); got == "" || strings.HasPrefix(got, "misdelivered") {
		t.Errorf("a 502 for an echo: %q; want an unexpected-status verdict", got)
	}
}

func TestCheckStream(t *testing.T) {
	u, _ := url.Parse("http://x/stream?n=3&size=2")
	resp := &http.Response{StatusCode: 200, Request: &http.Request{URL: u}}
	if got := checkStream(resp, []byte("001122"), "", "", nil); got != "" {
		t.Errorf("a right stream: %q", got)
	}
	if got := checkStream(resp, []byte("0011"), "", "", nil); !strings.HasPrefix(got, "misdelivered") {
		t.Errorf("a short stream: %q; want misdelivered", got)
	}
}

func TestCheckErrorWantsItsOwnID(t *testing.T) {
	check := checkError(502, "worker_crashed")
	resp := &http.Response{StatusCode: 502}
	if got := check(resp, []byte(`{"type":"worker_crashed","request_id":"a"}`), "a", "", nil); got != "" {
		t.Errorf("own error: %q", got)
	}
	if got := check(resp, []byte(`{"type":"worker_crashed","request_id":"b"}`), "a", "", nil); !strings.HasPrefix(got, "misdelivered") {
		t.Errorf("another request's error: %q; want misdelivered", got)
	}
	if got := check(resp, []byte(`{"type":"bad_response","request_id":"a"}`), "a", "", nil); got == "" {
		t.Error("wrong error type accepted")
	}
}

func TestReportErr(t *testing.T) {
	ok := &Report{Requests: 1000, TimedOut: 5, RSSStartMiB: 10, RSSEndMiB: 10.9, FDsStart: 30, FDsEnd: 30, Collateral: 2, ExitsAfterResp: 2}
	if err := ok.Err(); err != nil {
		t.Errorf("flat run: %v", err)
	}
	if err := (&Report{RSSStartMiB: 10, RSSEndMiB: 12.9, RSSSlackMiB: 2}).Err(); err != nil {
		t.Errorf("growth within 10%% and the slack: %v", err)
	}
	if err := (&Report{RSSStartMiB: 10, RSSEndMiB: 10, GoroutinesStart: 40, GoroutinesEnd: 42}).Err(); err != nil {
		t.Errorf("a connection's goroutine still ending: %v", err)
	}
	for name, r := range map[string]Report{
		"misdelivered": {Misdelivered: 1, RSSStartMiB: 10, RSSEndMiB: 10},
		"rss grew":     {RSSStartMiB: 10, RSSEndMiB: 11.5},
		"past slack":   {RSSStartMiB: 10, RSSEndMiB: 13.1, RSSSlackMiB: 2},
		"goroutines":   {RSSStartMiB: 10, RSSEndMiB: 10, GoroutinesStart: 40, GoroutinesEnd: 43},
		"fd leak":      {RSSStartMiB: 10, RSSEndMiB: 10, FDsStart: 30, FDsEnd: 31},
		"collateral":   {RSSStartMiB: 10, RSSEndMiB: 10, Collateral: 3, ExitsAfterResp: 2},
		"unexpected":   {RSSStartMiB: 10, RSSEndMiB: 10, Unexpected: 1},
		"timeouts":     {RSSStartMiB: 10, RSSEndMiB: 10, Requests: 1000, TimedOut: 6},
	} {
		if r.Err() == nil {
			t.Errorf("%s: no error", name)
		}
	}
	line := (&Report{Requests: 5, Misdelivered: 0, RSSStartMiB: 1, RSSEndMiB: 2, FDsStart: 3, FDsEnd: 4, Restarts: 6}).Line()
	if want := "soak: 5 requests, 0 misdelivered, rss 1.0->2.0 MiB, fds 3->4, goroutines 0->0, restarts 6"; line != want {
		t.Errorf("Line() = %q; want %q", line, want)
	}
}
