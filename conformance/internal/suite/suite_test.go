package suite

import (
	"context"
	"io"
	"strings"
	"testing"
)

// TestRunSelectingNothingIsAnError: a -run that matches no check would print
// "0 passed, 0 failed" and exit 0, as if a broken selection had passed.
func TestRunSelectingNothingIsAnError(t *testing.T) {
	o := Options{Function: "true", Watchdog: "/nonexistent/afterburn-watchdog", Layer: "e2e",
		Spec: "../../../spec/PROTOCOL.md", Run: "^kill-busy-worker$"}
	ok, err := Run(context.Background(), o, io.Discard)
	if ok || err == nil || !strings.Contains(err.Error(), "matches no check") || !strings.Contains(err.Error(), "e2e/kill-busy-worker") {
		t.Fatalf("Run with -run %q = %v, %v; want an error saying it matches no check and how ids look", o.Run, ok, err)
	}
	// A selection that matches runs its check: here it fails, since there is no watchdog.
	o.Run = "^e2e/json-logs$"
	var out strings.Builder
	ok, err = Run(context.Background(), o, &out)
	if err != nil || ok || !strings.Contains(out.String(), "0 passed, 1 failed") {
		t.Fatalf("Run with -run %q = %v, %v, output %q; want the one check run and failed", o.Run, ok, err, out.String())
	}
}
