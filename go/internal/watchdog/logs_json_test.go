package watchdog

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/afterburn-dev/afterburn/go/internal/watchdog/config"
)

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
		// Each line's own shape (§9.5) is obs's to test (obs/logs_json_test.go):
		// here, that every line is one, and what the watchdog put in them.
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil || m["time"] == nil || m["level"] == nil {
			t.Fatalf("log line %q: %v; want a JSON object with time and level", line, err)
		}
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
