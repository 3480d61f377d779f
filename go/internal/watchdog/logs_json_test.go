package watchdog

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/afterburn-dev/afterburn/go/internal/watchdog/config"
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

// TestLogFormatJSON: a watchdog with log_format=json writes only JSON lines
// (access log, worker output, its own) and passes AFTERBURN_LOG_FORMAT to its
// workers (§2.3).
func TestLogFormatJSON(t *testing.T) {
	t.Parallel()
	h := start(t, func(c *config.Config) { c.LogFormat = config.LogJSON })
	resp, body := h.Get("/env")
	var env map[string]string
	if err := json.Unmarshal([]byte(body), &env); resp.StatusCode != 200 || err != nil {
		t.Fatalf("/env: %d %q", resp.StatusCode, body)
	}
	if env["AFTERBURN_LOG_FORMAT"] != "json" {
		t.Errorf("AFTERBURN_LOG_FORMAT=%q; want json", env["AFTERBURN_LOG_FORMAT"])
	}
	req, _ := http.NewRequest("GET", h.url+"/print?x=secret", nil)
	req.Header.Set("X-Request-Id", "log-json-1")
	if resp, body := h.do(req); resp.StatusCode != 200 {
		t.Fatalf("/print: %d %q", resp.StatusCode, body)
	}
	h.Get("/crash") // a line of the watchdog's own
	h.logs.waitContains(t, `"stream":"stdout"`)
	h.logs.waitContains(t, `"stream":"stderr"`)
	h.logs.waitContains(t, `"request_id":"log-json-1"`)
	h.logs.waitContains(t, `exited or closed a pipe`)
	for _, line := range strings.Split(strings.TrimSuffix(h.logs.String(), "\n"), "\n") {
		m := decodeLine(t, []byte(line+"\n"))
		switch {
		case m["request_id"] == "log-json-1":
			if m["msg"] != "access" || m["path"] != "/print" || m["status"] != 200.0 || m["worker"] != 1.0 {
				t.Errorf("access line %s; want msg access, path /print without its query, status 200, worker 1", line)
			}
		case strings.Contains(line, "exited or closed a pipe"), strings.Contains(line, "replaced: crashed"):
			if m["level"] != "warning" {
				t.Errorf("a worker's crash %s; want level warning", line)
			}
		case strings.HasPrefix(m["msg"].(string), "listening on"):
			if m["level"] != "info" {
				t.Errorf("%s; want level info", line)
			}
		case m["stream"] == "stdout":
			if m["msg"] != "hello from stdout" || m["worker"] != 1.0 || m["pid"] == nil {
				t.Errorf("stdout line %s; want msg, worker and pid", line)
			}
		}
	}

	_, body = start(t, nil).Get("/env")
	if !strings.Contains(body, `"AFTERBURN_LOG_FORMAT":"text"`) {
		t.Errorf("default log_format: /env %s; want AFTERBURN_LOG_FORMAT text", body)
	}
}
