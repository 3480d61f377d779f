package e2e

import (
	"testing"

	"github.com/afterburn-dev/afterburn/conformance/internal/spec"
)

func TestParseMetrics(t *testing.T) {
	m, err := ParseMetrics(`# HELP afterburn_worker_restarts_total Worker replacements.
# TYPE afterburn_worker_restarts_total counter
afterburn_worker_restarts_total{reason="crashed"} 2
afterburn_worker_restarts_total{reason="timeout"} 1
# TYPE afterburn_workers gauge
afterburn_workers{state="idle",pool="a b"} 2
afterburn_queue_depth 0
afterburn_request_duration_seconds_bucket{le="+Inf"} 7 1700000000000
`)
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := m.Get("afterburn_worker_restarts_total", "reason", "crashed"); !ok || v != 2 {
		t.Errorf("restarts crashed: got %v, %v; want 2", v, ok)
	}
	if v, ok := m.Get("afterburn_workers", "state", "idle", "pool", "a b"); !ok || v != 2 {
		t.Errorf("workers idle (labels in another order): got %v, %v; want 2", v, ok)
	}
	if _, ok := m.Get("afterburn_queue_depth"); !ok {
		t.Error("queue depth without labels: missing")
	}
	if got := m.Sum("afterburn_worker_restarts_total"); got != 3 {
		t.Errorf("Sum: got %v; want 3", got)
	}
	if m.Types["afterburn_workers"] != "gauge" {
		t.Errorf("type: got %q", m.Types["afterburn_workers"])
	}
	if _, err := ParseMetrics("not a metric line at all {"); err == nil {
		t.Error("bad line: got no error")
	}
}

func TestGroups(t *testing.T) {
	secs, err := spec.Load("../../../spec/PROTOCOL.md")
	if err != nil {
		t.Skipf("spec: %v", err)
	}
	seen := map[string]bool{}
	n := 0
	for _, g := range Groups() {
		for _, c := range g.Checks {
			n++
			id := "e2e/" + c.Name
			if seen[id] {
				t.Errorf("duplicate check %s", id)
			}
			seen[id] = true
			if !secs.Has(c.Section) {
				t.Errorf("%s: section %s is not in the spec", id, c.Section)
			}
			if c.Description == "" || c.Run == nil {
				t.Errorf("%s: no description or no Run", id)
			}
		}
	}
	if n < 30 {
		t.Errorf("got %d e2e checks; want at least 30", n)
	}
}
