package e2e

import (
	"encoding/json"
	"errors"
	"net/url"
	"os/exec"
	"regexp"
	"strings"
)

// jsonLogs: §9.5, §2.3 — with -log_format json, every line the watchdog writes is one JSON
// object with time, level and msg; a line the handler writes through the library's request
// logger (the fixture's /log) reaches the log as one object with the request id and the text
// as msg, merged with the watchdog's worker, pid and stream; the access line of that request
// has msg access and the request id. The text holds quotes, a backslash and non-ASCII, which a
// library must escape as JSON.
func jsonLogs(t *T) {
	w := t.StartWatchdog([]string{"-workers", "1", "-log_format", "json"}, nil, true)
	from := w.Log.Len()
	id, text := rid("jsonlog"), rid(`say "hi" \ é`)
	if m := t.JSON(t.Get("/log?text="+url.QueryEscape(text), "X-Request-Id: "+id), 200); m["logged"] != true {
		t.Fatalf("%s: got %v; want logged true", t.lastReq(), m)
	}
	t.LogWait(from, regexp.MustCompile(`"msg":\s*"access"[^\n]*`+regexp.QuoteMeta(id)))
	var logged, access bool
	for _, line := range strings.Split(strings.TrimSpace(w.Log.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("log line %q is not a JSON object: %v; want every line one JSON object with log_format json (§9.5)", line, err)
		}
		for _, k := range []string{"time", "level", "msg"} {
			if _, ok := m[k].(string); !ok {
				t.Fatalf("log line %s has no string %q; want time, level and msg on every line (§9.5)", line, k)
			}
		}
		if m["request_id"] != id {
			continue
		}
		switch {
		case m["msg"] == "access":
			access = true
		case m["msg"] == text:
			if m["worker"] == nil || m["pid"] == nil || m["stream"] != "stderr" {
				t.Fatalf("the request logger's line %s lacks the watchdog's worker, pid or stream stderr; want it merged (§9.5)", line)
			}
			logged = true
		}
	}
	if !logged {
		t.Fatalf("no log line has request_id %q and msg %q; want the library's request logger to write it as one JSON object when AFTERBURN_LOG_FORMAT is json (§9.5, §2.3)\nlog:\n%s", id, text, w.Log.Since(from))
	}
	if !access {
		t.Fatalf("no access line for request %s (§9.5)", id)
	}
}

// jsonLogsBadSetting: §9.5 — with log_format json asked for, a setting that does not parse
// (here workers) is reported as one JSON line with level error naming it, and nothing else:
// not the usage text mode prints. The watchdog exits 2 without starting a worker.
func jsonLogsBadSetting(t *T) {
	args := watchdogArgs(t.cfg.Function, t.cfg.flags([]string{"-log_format", "json", "-workers", "many"}))
	cmd := exec.CommandContext(t.ctx, t.cfg.Watchdog, args...)
	cmd.Env = watchdogEnv(nil)
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 {
		t.Fatalf("-workers many: %v; want exit status 2\n%s", err, out)
	}
	var line struct{ Time, Level, Msg string }
	if err := json.Unmarshal(out, &line); err != nil || line.Time == "" || line.Level != "error" || !strings.Contains(line.Msg, "workers") {
		t.Fatalf("-workers many with -log_format json wrote %q (%v); want one JSON line with time, level error and a msg naming workers (§9.5)", out, err)
	}
}
