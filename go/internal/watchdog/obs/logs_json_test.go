package obs

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// decodeLine checks that line is one JSON object on one line with the fields
// every json-mode line has (time in RFC 3339 with milliseconds, level, msg
// unless the worker's own object had none) and returns it.
func decodeLine(t *testing.T, line []byte) map[string]any {
	t.Helper()
	if !bytes.HasSuffix(line, []byte("\n")) || bytes.Count(line, []byte("\n")) != 1 {
		t.Fatalf("%q: want exactly one line", line)
	}
	if !utf8.Valid(line) || !json.Valid(line) {
		t.Fatalf("%q: not valid JSON in UTF-8", line)
	}
	var m map[string]any
	if err := json.Unmarshal(line, &m); err != nil {
		t.Fatalf("%q: %v; want a JSON object", line, err)
	}
	stamp, _ := m["time"].(string)
	if _, err := time.Parse("2006-01-02T15:04:05.000Z07:00", stamp); err != nil || len(stamp) != len("2006-01-02T15:04:05.000Z") {
		t.Errorf("%q: time %q; want RFC 3339 with milliseconds", line, stamp)
	}
	if _, ok := m["level"].(string); !ok {
		t.Errorf("%q: no level", line)
	}
	return m
}

// TestWorkerLineJSON: §9.5 with log_format=json — a worker line becomes a
// JSON object whatever bytes it holds; a line that is a JSON object is
// merged, its own keys kept.
func TestWorkerLineJSON(t *testing.T) {
	long := strings.Repeat("é", 40000) // 80,000 bytes
	for _, tc := range []struct {
		name string
		line string
		want map[string]any // fields the decoded line must have (numbers as float64)
	}{
		{"text", "hello", map[string]any{"msg": "hello", "worker": 2.0, "pid": 42.0, "stream": "stderr", "level": "info"}},
		{"quotes and controls", "a \"q\" \\ \t\x01\x7f\r", map[string]any{"msg": "a \"q\" \\ \t\x01\x7f\r"}},
		{"invalid UTF-8", "bad \xff\xfe byte \xc3", map[string]any{"msg": "bad \ufffd\ufffd byte \ufffd"}},
		{"U+2028", "line\u2028sep", map[string]any{"msg": "line\u2028sep"}},
		{"JSON array", `[1,2,3]`, map[string]any{"msg": `[1,2,3]`, "worker": 2.0}},
		{"JSON string", `"just a string"`, map[string]any{"msg": `"just a string"`}},
		{"JSON number", `42`, map[string]any{"msg": `42`}},
		{"broken object", `{"request_id": "r1", "msg":`, map[string]any{"msg": `{"request_id": "r1", "msg":`}},
		{"object with invalid UTF-8", "{\"msg\":\"\xff\"}", map[string]any{"msg": "{\"msg\":\"\ufffd\"}"}},
		{"library line", `{"request_id":"r1","msg":"charging card"}`,
			map[string]any{"request_id": "r1", "msg": "charging card", "worker": 2.0, "pid": 42.0, "stream": "stderr", "level": "info"}},
		{"library line with level and spaces", ` { "request_id" : "r2", "level": "warn", "msg": "slow" } `,
			map[string]any{"request_id": "r2", "level": "warn", "msg": "slow", "stream": "stderr"}},
		{"keys the worker set win", `{"msg":"m","time":"then","worker":"mine","pid":1,"stream":"x"}`,
			map[string]any{"msg": "m", "time": "then", "worker": "mine", "pid": 1.0, "stream": "x"}},
		{"empty object", `{}`, map[string]any{"worker": 2.0, "level": "info"}},
		{"nested object", `{"msg":"n","ctx":{"time":1}}`, map[string]any{"msg": "n", "worker": 2.0}},
		{"empty line", "", map[string]any{"msg": ""}},
		{"long line", long, map[string]any{"msg": long}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := AppendWorkerJSON([]byte("earlier line\n"), 2, 42, "stderr", []byte(tc.line))
			out = bytes.TrimPrefix(out, []byte("earlier line\n"))
			var m map[string]any
			if tc.name == "keys the worker set win" {
				if err := json.Unmarshal(out, &m); err != nil {
					t.Fatalf("%q: %v", out, err)
				}
			} else {
				m = decodeLine(t, out)
			}
			for k, v := range tc.want {
				if m[k] != v {
					t.Errorf("%q: %s = %#v; want %#v", out, k, m[k], v)
				}
			}
			if n := bytes.Count(out, []byte(`"worker"`)); n != 1 {
				t.Errorf("%q: %d worker keys; want 1", out, n)
			}
		})
	}
}

// TestForwardLinesJSON: a worker line longer than 64 KiB is split (§9.5),
// each piece its own valid JSON line, even when the split cuts a UTF-8
// character or a JSON object in two.
func TestForwardLinesJSON(t *testing.T) {
	out := &LockedBuffer{}
	l := NewLogger(out, true)
	l.Json = true
	obj := `{"request_id":"r1","msg":"` + strings.Repeat("ü", MaxLogLine) + `"}`
	text := "x" + strings.Repeat("€", MaxLogLine/2) // "x" shifts every cut into a character
	l.ForwardLines(3, 77, "stdout", strings.NewReader(obj+"\n"+text+"\r\n{\"msg\":\"last\"}"))
	l.Printf("end")
	var pieces int
	for _, line := range strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n") {
		m := decodeLine(t, []byte(line+"\n"))
		if m["msg"] == "end" {
			continue
		}
		if m["worker"] != 3.0 || m["pid"] != 77.0 || m["stream"] != "stdout" {
			t.Errorf("%.80q…: want worker 3, pid 77, stream stdout", line)
		}
		pieces++
	}
	// 131,101 bytes of object in 3 pieces, 98,305 of text in 2, and the last line.
	if pieces != 6 {
		t.Errorf("%d worker lines; want 6: the two long lines split at 64 KiB, and the last one", pieces)
	}
	if !strings.Contains(out.String(), `"msg":"last"`) || !strings.Contains(out.String(), `"msg":"end"`) {
		t.Errorf("the last worker line or the watchdog's own is missing:\n%.300s", out.String())
	}
}

// TestAccessAndOwnJSON: the access log and the watchdog's own lines in json
// mode, with the fields of §9.5.
func TestAccessAndOwnJSON(t *testing.T) {
	start := time.Date(2026, 11, 26, 7, 0, 0, 123_000_000, time.UTC)
	b := AppendAccessJSON(nil, &AccessEntry{Start: start, RequestID: "r\"1", Method: "GET", Path: "/a\xff", Status: 200, Bytes: 5, Worker: 3}, 1234567*time.Nanosecond)
	m := decodeLine(t, b)
	for k, v := range map[string]any{"time": "2026-11-26T07:00:00.123Z", "msg": "access", "request_id": "r\"1", "method": "GET",
		"path": "/a\ufffd", "status": 200.0, "bytes": 5.0, "duration_ms": 1.235, "worker": 3.0} {
		if m[k] != v {
			t.Errorf("%s: %s = %#v; want %#v", b, k, m[k], v)
		}
	}
	m = decodeLine(t, AppendAccessJSON(nil, &AccessEntry{Start: start, Status: 499}, 0))
	if w, ok := m["worker"]; !ok || w != nil {
		t.Errorf("no worker: worker = %#v; want null", w)
	}
	out := &LockedBuffer{}
	l := NewLogger(out, false)
	l.Json = true
	l.Printf("w%d pid %d replaced: %s", 1, 2, "crashed \"x\"")
	if m := decodeLine(t, []byte(out.String())); m["msg"] != `w1 pid 2 replaced: crashed "x"` || m["level"] != "info" {
		t.Errorf("own line %q; want the printf text as msg, level info", out.String())
	}
	for level, logf := range map[string]func(*Logger, string, ...any){"warning": (*Logger).Warnf, "error": (*Logger).Errorf} {
		out := &LockedBuffer{}
		l := NewLogger(out, false)
		l.Json = true
		logf(l, "at %s", level)
		if m := decodeLine(t, []byte(out.String())); m["msg"] != "at "+level || m["level"] != level {
			t.Errorf("own line %q; want level %s", out.String(), level)
		}
	}
	// Text lines keep their one form whatever the level.
	text := &LockedBuffer{}
	NewLogger(text, false).Warnf("w%d gone", 1)
	if text.String() != "afterburn-watchdog: w1 gone\n" {
		t.Errorf("text warn line %q", text.String())
	}
}
