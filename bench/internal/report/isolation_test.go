package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/afterburn-dev/afterburn/bench/internal/harness"
)

func TestMarkdownReportsIsolation(t *testing.T) {
	f := &harness.Figures{}
	f.Runs = append(f.Runs, harness.LoadResult{RPS: 420, P50us: 1800, P99us: 4000})
	f.RPS, f.P50us, f.P99us = harness.Spread{Median: 420, N: 1}, harness.Spread{Median: 1800, N: 1}, harness.Spread{Median: 4000, N: 1}
	iso := &harness.Isolation{ModelMiB: 512, Workers: 4, PacedRPS: 50, Functions: []*harness.IsolationFunction{{
		Name: "hello", Workload: harness.Hello,
		Figures:   map[string]harness.ByConcurrency{harness.IsoRequest: {"c8": f}},
		Paced:     map[string]*harness.Figures{harness.IsoRequest: f},
		BareFloor: []harness.ForkLoop{{RoundsPerS: 1400, Rounds: 1}},
	}}, Targets: []harness.Target{{Name: "hello c=8: request req/s ÷ bare fork loop", Value: 0.3, Goal: ">= 0.5"}}}
	var b bytes.Buffer
	isolation(&b, iso)
	out := b.String()
	for _, want := range []string{"isolation=request", "| hello | 8 | 1400 (1400–1400) | — | — |", "420", "1800 / 4000", "request req/s ÷ bare fork loop"} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
}
