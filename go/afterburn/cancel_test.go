package afterburn

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestParseCancel(t *testing.T) {
	tests := []struct {
		line, token string
		ok          bool
	}{
		{"cancel abc123", "abc123", true},
		{"cancel " + strings.Repeat("Z", 64), strings.Repeat("Z", 64), true},
		{"cancel " + strings.Repeat("Z", 65), "", false},
		{"cancel ", "", false},
		{"cancel", "", false},
		{"cancel a b", "", false},
		{"cancel abc\r", "", false},
		{"Cancel abc", "", false},
		{"cancel  abc", "", false},
		{"cancel ab-c", "", false},
		{"", "", false},
	}
	for _, tt := range tests {
		token, ok := parseCancel([]byte(tt.line))
		if token != tt.token || ok != tt.ok {
			t.Errorf("parseCancel(%q) = %q, %v; want %q, %v", tt.line, token, ok, tt.token, tt.ok)
		}
	}
}

// TestReadCancels feeds the cancel pipe's reader lines of every kind, in reads that
// split them, and checks which exchanges it cancelled.
func TestReadCancels(t *testing.T) {
	f := newInflight()
	exs := map[string]*exchange{}
	for _, token := range []string{"a1", "b2", "c3", "d4"} {
		ex := &exchange{token: token}
		exs[token] = ex
		f.add(ex)
	}
	f.add(&exchange{})  // no token: never registered
	f.remove(exs["d4"]) // ended: a late line reaches nothing
	in := "cancel a1\n" + "x" + strings.Repeat("y", 1000) + " cancel b2\n" + "cancel zz9\n" +
		"cancel c3\n" + "cancel d4\n" + "cancel b2" // no newline: EOF inside a line
	readCancels(&segmentReader{segs: [][]byte{[]byte(in[:14]), []byte(in[14:600]), []byte(in[600:])}}, f)
	for token, want := range map[string]bool{"a1": true, "b2": false, "c3": true, "d4": false} {
		if got := exs[token].ended; got != want {
			t.Errorf("exchange %s cancelled: %v; want %v", token, got, want)
		}
	}
}

// TestCancelReadBeforeItsHead: §2.5 — a cancellation read before its exchange's head
// (the cancel pipe and the lanes are separate pipes) cancels that exchange as it is
// added; only the last earlyTokens such tokens are remembered, and a cancellation
// reaches no other exchange.
func TestCancelReadBeforeItsHead(t *testing.T) {
	f := newInflight()
	if f.cancel("early1") {
		t.Fatal("cancel of a token no exchange carries reported one")
	}
	early, other := &exchange{token: "early1"}, &exchange{token: "other1"}
	f.add(early)
	f.add(other)
	if !early.ended || other.ended {
		t.Fatalf("cancelled: early %v, other %v; want only the exchange whose cancellation came first", early.ended, other.ended)
	}
	for i := range earlyTokens + 1 {
		f.cancel(fmt.Sprintf("t%d", i))
	}
	oldest, newest := &exchange{token: "t0"}, &exchange{token: fmt.Sprintf("t%d", earlyTokens)}
	f.add(oldest)
	f.add(newest)
	if oldest.ended || !newest.ended {
		t.Fatalf("after %d unknown tokens: oldest cancelled %v, newest %v; want the oldest forgotten", earlyTokens+1, oldest.ended, newest.ended)
	}
	if len(f.earlySet) > earlyTokens {
		t.Fatalf("%d tokens remembered; want at most %d", len(f.earlySet), earlyTokens)
	}
}

// cancelTiming is a handler that reports when its context was cancelled, relative to
// the deadline it reports, and the context's error.
func cancelTiming(w http.ResponseWriter, r *http.Request) {
	d, ok := r.Context().Deadline()
	<-r.Context().Done()
	fmt.Fprintf(w, "%v %v %v", ok, time.Since(d) >= cancelAfterDeadline, r.Context().Err())
}

// TestCancelAfterDeadline: the library's own cancellation fires 50 ms after the
// deadline (PROTOCOL.md §5.2, §8.6), so that the watchdog's 504 comes first; the
// context still reports the deadline itself. One lane, then several.
func TestCancelAfterDeadline(t *testing.T) {
	const want = "true true context deadline exceeded"
	out, _, err := serveString(t, http.HandlerFunc(cancelTiming),
		"GET /x HTTP/1.1\r\nHost: fn\r\nAfterBurn-Timeout-Ms: 20\r\n\r\n")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(out, "\r\n\r\n"+want) {
		t.Errorf("one lane: got %q; want the body %q", out, want)
	}

	ls := startLanes(t, http.HandlerFunc(cancelTiming), 2)
	ls.write(2, "GET /x HTTP/1.1\r\nHost: fn\r\nAfterBurn-Request-Id: A\r\nAfterBurn-Exchange: tokA\r\nAfterBurn-Timeout-Ms: 20\r\n\r\n")
	if _, body := ls.response(2); body != want {
		t.Errorf("lane 2 of 2: got %q; want %q", body, want)
	}
	if err := ls.end(); err != nil {
		t.Fatal(err)
	}
}
