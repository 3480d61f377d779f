package watchdog

import (
	"strings"
	"testing"
)

// TestInitExitLogged: §9.1 — a worker that exits before its handshake reply
// is logged as having exited during initialisation, with its exit status, after
// the stderr lines it wrote; not as a malformed reply ("unexpected EOF").
func TestInitExitLogged(t *testing.T) {
	t.Parallel()
	h := start(t, nil, "AFTERBURN_TEST_INIT=fail")
	line := h.logs.waitContains(t, "w1 init_failed:")
	want := "w1 init_failed: exited during initialisation, before its handshake reply (exit status 1)"
	if !strings.Contains(line, want) {
		t.Errorf("log line %q; want it to contain %q", line, want)
	}
	log := h.logs.String()
	said := strings.Index(log, "w1 stderr: child: init failed on purpose")
	if said < 0 || said > strings.Index(log, want) {
		t.Errorf("the worker's stderr line is missing or after the failure line; log:\n%s", log)
	}
}
