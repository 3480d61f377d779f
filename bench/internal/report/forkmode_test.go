package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/afterburn-dev/afterburn/bench/internal/harness"
)

func forkSample() *harness.ForkMode {
	figs := func(rps float64) harness.ByWorkload {
		return harness.ByWorkload{harness.Model: {"c8": {RPS: harness.Spread{Median: rps, Min: rps, Max: rps, N: 1},
			P50us: harness.Spread{Median: 900, N: 1}, P99us: harness.Spread{Median: 2100, N: 1}}}}
	}
	return &harness.ForkMode{
		ModelMiB: 512, Requests: 10000,
		Pools: []*harness.ForkPool{
			{Spawn: harness.SpawnExec, Workers: 8, Memory: &harness.TreeMemory{PSSMiB: 4400, RSSMiB: 4450}, Figures: figs(1500)},
			{Spawn: harness.SpawnFork, Workers: 8, Memory: &harness.TreeMemory{PSSMiB: 640, RSSMiB: 4300}, Figures: figs(1470)},
		},
		Crash: []harness.CrashFigures{{Spawn: harness.SpawnFork, Workers: 1, Ms: harness.Spread{Median: 11.5, Min: 9, Max: 19, N: 20}}},
		Ratios: []harness.ForkRatio{{Workers: 8, Workload: harness.Model, Concurrency: "c8",
			Ratio: harness.Spread{Median: 0.98, Min: 0.98, Max: 0.98, N: 1}}},
		Targets: []harness.Target{{Name: "fork: median crash to answering, ms", Value: 11.5, Min: 9, Max: 19, Goal: "<= 20", Met: true}},
	}
}

func TestMarkdownReportsForkMode(t *testing.T) {
	r := sample()
	r.ForkMode = forkSample()
	var b bytes.Buffer
	Markdown(&b, r)
	mustContain(t, b.String(),
		"## Python fork mode: exec against fork, 512 MiB synthetic model",
		"| 8 | 4400 | 640 | 0.15 | 4450 | 4300 |",
		"| model | 8 | 8 | 1500 | 1470 | 0.98× | 900 / 2100 | 900 / 2100 |",
		"Crash to answering, fork, 1 worker: 11.5 ms median (9.0–19.0) over 20 crashes",
		"| fork: median crash to answering, ms | 11.5 (9.00–19.0) | <= 20 | yes |")
}

// TestForkOnlyRunIsPublishedBesideTheWholeRun: a run of the fork scenario alone writes
// latest-fork.*, never latest.*, which belong to a whole run.
func TestForkOnlyRunIsPublishedBesideTheWholeRun(t *testing.T) {
	dir := t.TempDir()
	r := guarded(false)
	r.Order, r.Languages, r.Hop = nil, nil, nil
	r.ForkMode = forkSample()
	if _, err := Publish(dir, "2026-11-26T050000Z-fork", r); err != nil {
		t.Fatal(err)
	}
	files := listDir(t, dir)
	if got := strings.Join(names(files), " "); got != "2026-11-26T050000Z-fork.json latest-fork.json latest-fork.md" {
		t.Errorf("a fork-only run wrote %s; want its JSON and latest-fork.{json,md}", got)
	}
	if !strings.Contains(files["latest-fork.md"], "## Python fork mode") {
		t.Errorf("latest-fork.md has no fork-mode section:\n%s", files["latest-fork.md"])
	}
}
