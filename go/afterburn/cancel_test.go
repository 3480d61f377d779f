package afterburn

import (
	"strings"
	"testing"
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
