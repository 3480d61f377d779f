package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/afterburn-dev/afterburn/bench/internal/harness"
)

func lanesSample() *harness.Lanes {
	figs := func(w harness.Workload, c string, rps, p50, p99 float64) harness.ByWorkload {
		return harness.ByWorkload{w: {c: {RPS: harness.Spread{Median: rps, Min: rps, Max: rps, N: 1},
			P50us: harness.Spread{Median: p50, N: 1}, P99us: harness.Spread{Median: p99, N: 1}}}}
	}
	mem := func(rss, pss, rssAfter, pssAfter float64) *harness.PoolMemory {
		return &harness.PoolMemory{During: &harness.TreeMemory{RSSMiB: rss, PSSMiB: pss}, After: &harness.TreeMemory{RSSMiB: rssAfter, PSSMiB: pssAfter}}
	}
	cpu := func(b harness.ByWorkload, us float64) harness.ByWorkload {
		b[harness.IO]["c32"].Host = &harness.HostSpread{TreeCPUus: harness.Spread{Median: us, N: 1}}
		return b
	}
	return &harness.Lanes{K: 32, WaitMs: 50, Order: []string{"java"}, Languages: map[string]*harness.LanesLanguage{
		"java": {
			Lanes:    &harness.LanePool{Key: "java/io-w1-l32", Workers: 1, Lanes: 32, Memory: mem(90, 80, 91, 81), Figures: cpu(figs(harness.IO, "c32", 615, 50600, 53000), 150)},
			Workers:  &harness.LanePool{Key: "java/io-w32-l1", Workers: 32, Lanes: 1, Memory: mem(1800, 1500, 1810, 1510), Figures: cpu(figs(harness.IO, "c32", 625, 50500, 52000), 900)},
			Hello:    &harness.LanePool{Key: "java/hello-w2-l1", Workers: 2, Lanes: 1, Figures: figs(harness.Hello, "c8", 7900, 900, 2000)},
			RPSRatio: harness.Spread{Median: 0.984, Min: 0.984, Max: 0.984, N: 1}, RSSRatio: 0.05, PSSRatio: 0.0533,
			Published: &harness.PublishedHello{Date: "2026-11-26T03:46:54Z", RPS: harness.Spread{Median: 8000, N: 3}},
			Targets: []harness.Target{
				{Name: "io c=32 req/s: 1 worker × 32 lanes ÷ 32 workers × 1 lane", Value: 0.984, Min: 0.984, Max: 0.984, Goal: ">= 0.9", Met: true},
				{Name: "tree RSS during io load: 1 worker × 32 lanes ÷ 32 workers × 1 lane", Value: 0.05, Min: 0.05, Max: 0.05, Goal: "<= 0.125", Met: true},
			},
		},
	}}
}

// TestMarkdownReportsLanes: the io pools side by side with their memory, hello with -lanes 1
// beside this run's languages table and the published figure, and the goals per language.
func TestMarkdownReportsLanes(t *testing.T) {
	r := sample()
	r.Lanes = lanesSample()
	var b bytes.Buffer
	Markdown(&b, r)
	out := b.String()
	mustContain(t, out,
		"## Lanes: 1 worker × 32 lanes against 32 workers × 1 lane",
		"| java | 615 | 625 | 0.98× | 50600 / 53000 | 50500 / 52000 | 150 / 900 | 90 (91) | 1800 (1810) | 0.05 | 80 (81) | 1500 (1510) | 0.05 |",
		"| java | 7900 | 900 / 2000 | 8000 | 8000 | 2026-11-26T03:46:54Z | 0.99× |",
		"| java | io c=32 req/s: 1 worker × 32 lanes ÷ 32 workers × 1 lane | 0.98 | >= 0.9 | yes |",
		"| java | tree RSS during io load: 1 worker × 32 lanes ÷ 32 workers × 1 lane | 0.05 | <= 0.125 | yes |")
	if strings.Contains(out, "for orientation only") {
		t.Errorf("K = 32 is the issue's: no orientation note wanted")
	}
	r.Lanes.K = 4
	b.Reset()
	Markdown(&b, r)
	mustContain(t, b.String(), "Issue 20's goals are stated for 32 lanes; at 4 they are for orientation only.")
}

// TestLanesOnlyRunIsPublishedBesideTheWholeRun: a run of the lanes scenario alone writes
// latest-lanes.*; with the fork scenario, latest-lanes-fork.*; never latest.*.
func TestLanesOnlyRunIsPublishedBesideTheWholeRun(t *testing.T) {
	for _, tc := range []struct {
		fork bool
		want string
	}{{false, "lanes"}, {true, "lanes-fork"}} {
		dir := t.TempDir()
		r := guarded(false)
		r.Order, r.Languages, r.Hop = nil, nil, nil
		r.Lanes = lanesSample()
		if tc.fork {
			r.ForkMode = forkSample()
		}
		if got := OnlyScenarios(r); got != tc.want {
			t.Errorf("OnlyScenarios = %q; want %q", got, tc.want)
		}
		stamp := "2026-11-26T050000Z-" + tc.want
		if _, err := Publish(dir, stamp, r); err != nil {
			t.Fatal(err)
		}
		files := listDir(t, dir)
		if got, want := strings.Join(names(files), " "), stamp+".json latest-"+tc.want+".json latest-"+tc.want+".md"; got != want {
			t.Errorf("wrote %s; want %s", got, want)
		}
		if !strings.Contains(files["latest-"+tc.want+".md"], "## Lanes: 1 worker × 32 lanes") {
			t.Errorf("latest-%s.md has no lanes section", tc.want)
		}
	}
	if got := OnlyScenarios(sample()); got != "" {
		t.Errorf("OnlyScenarios of a whole run = %q; want \"\"", got)
	}
}

// TestMarkdownSaysALanguageWasNotMeasured: a library serving fewer lanes than asked is named
// above the table, and has no row in it (nor pools in the quiet-run guard's table).
func TestMarkdownSaysALanguageWasNotMeasured(t *testing.T) {
	r := guarded(false)
	r.Lanes = lanesSample()
	r.Lanes.Order = append(r.Lanes.Order, "python")
	r.Lanes.Languages["python"] = &harness.LanesLanguage{Skipped: "the library serves fewer lanes than asked: python/io-w1-l32: 1 worker(s) idle with 1 free lanes; want 32"}
	var b bytes.Buffer
	Markdown(&b, r)
	out := b.String()
	mustContain(t, out, "**python not measured**: the library serves fewer lanes than asked: python/io-w1-l32: 1 worker(s) idle with 1 free lanes; want 32.")
	if strings.Contains(out, "| python |") {
		t.Errorf("a language not measured has a row:\n%s", out)
	}
}
