package afterburn

import (
	"net/http"
	"testing"
)

func TestLogf(t *testing.T) {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		Logf(r, "one %d", 1)
		Logf(r, "two\nlines\n")
	})
	_, logs, err := serveString(t, h, "GET /x HTTP/1.1\r\nHost: fn\r\nAfterBurn-Request-Id: r-7\r\n\r\n")
	if err != nil {
		t.Fatal(err)
	}
	if want := "[r-7] one 1\n[r-7] two\n[r-7] lines\n"; logs != want {
		t.Fatalf("got %q; want %q", logs, want)
	}
}

// TestLogfJSON: with AFTERBURN_LOG_FORMAT=json (PROTOCOL.md §2.3, §9.5) each Logf
// is one JSON object on one line, {"request_id","msg"}, valid whatever the text.
func TestLogfJSON(t *testing.T) {
	defer func(old func() bool) { logJSON = old }(logJSON)
	logJSON = func() bool { return true }
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		Logf(r, "one %d <&>", 1)
		Logf(r, "two\nlines\n")
		Logf(r, "bad \xff \"q\"")
	})
	_, logs, err := serveString(t, h, "GET /x HTTP/1.1\r\nHost: fn\r\nAfterBurn-Request-Id: r-7\r\n\r\n")
	if err != nil {
		t.Fatal(err)
	}
	want := `{"request_id":"r-7","msg":"one 1 <&>"}` + "\n" +
		`{"request_id":"r-7","msg":"two\nlines"}` + "\n" +
		`{"request_id":"r-7","msg":"bad \ufffd \"q\""}` + "\n"
	if logs != want {
		t.Fatalf("got  %s\nwant %s", logs, want)
	}
}

// TestJSONLogFormat: only AFTERBURN_LOG_FORMAT=json selects JSON lines.
func TestJSONLogFormat(t *testing.T) {
	for v, want := range map[string]bool{"json": true, "text": false, "": false, "JSON": false} {
		if got := jsonLogFormat(func(string) string { return v }); got != want {
			t.Errorf("AFTERBURN_LOG_FORMAT=%q: json %v; want %v", v, got, want)
		}
	}
}
