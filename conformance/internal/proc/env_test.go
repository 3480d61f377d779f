package proc

import (
	"slices"
	"testing"
)

func TestEnviron(t *testing.T) {
	t.Setenv("AFTERBURN_FDS", "9,9")     // the caller's shell must not reach a check
	t.Setenv("FIXTURE_BANNER", "leaked") // nor the fixture's switches
	t.Setenv("CONFORMANCE_KEEP", "kept")
	t.Setenv("CONFORMANCE_OVERLAID", "old")
	env := Environ(IsProtocolVariable,
		map[string]string{"AFTERBURN_FDS": "3,4", "CONFORMANCE_OVERLAID": "base"},
		map[string]string{"CONFORMANCE_OVERLAID": "extra"})
	for _, want := range []string{"AFTERBURN_FDS=3,4", "CONFORMANCE_KEEP=kept", "CONFORMANCE_OVERLAID=extra"} {
		if !slices.Contains(env, want) {
			t.Errorf("env lacks %s", want)
		}
	}
	for _, kv := range env {
		if kv == "FIXTURE_BANNER=leaked" || kv == "AFTERBURN_FDS=9,9" || kv == "CONFORMANCE_OVERLAID=old" || kv == "CONFORMANCE_OVERLAID=base" {
			t.Errorf("env has %s", kv)
		}
	}
	if !slices.IsSorted(env) {
		t.Errorf("env not sorted")
	}
}
