package report

import (
	"bytes"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/afterburn-dev/afterburn/bench/internal/harness"
)

// guarded is sample() with the quiet-run guard's figures on its runs; noisy marks
// java/afterburn's hello c=1 run as staying over the others' CPU threshold.
func guarded(noisy bool) *harness.Results {
	r := sample()
	l := r.Languages["java"]
	for _, by := range []harness.ByWorkload{l.AfterBurn, l.Fork, l.Proxy, l.Limit, l.Ceiling} {
		for _, f := range by[harness.Hello] {
			f.Runs = []harness.LoadResult{{RPS: f.RPS.Median, Requests: 30000, WrkCPUms: 1500,
				Guard: &harness.Guard{Attempt: 1, OthersPct: 0.4, KernelPct: 0.3, StealPct: 0.1, CalBeforeMs: 6, CalAfterMs: 6.12, WrkCPUPct: 50, WrkUsPerReq: 50}}}
		}
	}
	r.Quiet = &harness.QuietSummary{Thresholds: harness.DefaultQuietThresholds, CPUs: "1",
		CalibrationWork: "SHA-256 of 8 MiB", BestCalibrationMs: 6, Runs: 10}
	if noisy {
		g := l.AfterBurn[harness.Hello]["c1"].Runs[0].Guard
		g.Attempt, g.OthersPct = 3, 48.5
		g.Noisy = []string{"others' CPU 48.50 %, not under 2 %"}
		g.Busiest = []string{"hog[4242] 1450 ms"}
		r.Quiet.Noisy = []harness.GuardedRun{{Config: "java/afterburn", Workload: harness.Hello, Concurrency: "c1", Rep: 1,
			Result: l.AfterBurn[harness.Hello]["c1"].Runs[0]}}
	}
	return r
}

func TestMarkdownSaysANoisyRunAtTheTop(t *testing.T) {
	var b bytes.Buffer
	Markdown(&b, guarded(true))
	out := b.String()
	banner := strings.Index(out, "**NOISY RUN, NOT PUBLISHED.** 1 of the 10 measured runs")
	if banner < 0 || banner > strings.Index(out, "- machine:") {
		t.Errorf("markdown does not open with the noisy banner:\n%s", out)
	}
	mustContain(t, out,
		"- java/afterburn hello c=1 rep 1, attempt 3: others' CPU 48.50 %, not under 2 % (busiest outside the tree, any CPU: hog[4242] 1450 ms)",
		"| java/afterburn | hello | 1 | 3 | 48.50 | 0.30 | 0.10 | 2.0 | 50 | 50.0 |",
	)
	b.Reset()
	Markdown(&b, guarded(false))
	mustContain(t, b.String(), "Quiet run: each of the 10 measured runs stayed within the quiet-run guard's thresholds",
		"| limit | hello | 1 | 1 | 0.40 | 0.30 | 0.10 | 2.0 | 50 | 50.0 |")
	if strings.Contains(b.String(), "NOISY") {
		t.Errorf("a quiet run's markdown says NOISY:\n%s", b.String())
	}
}

// listDir lists the files in dir with their contents.
func listDir(t *testing.T, dir string) map[string]string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		out[e.Name()] = string(b)
	}
	return out
}

func names(m map[string]string) []string {
	var out []string
	for n := range m {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// publishQuiet publishes a quiet whole run into the empty dir, checks that it wrote its JSON
// and latest.{json,md,png}, and returns dir's files: what a run that must not be published
// as latest is to leave as they are.
func publishQuiet(t *testing.T, dir, stamp string) map[string]string {
	t.Helper()
	if _, err := Publish(dir, stamp, guarded(false)); err != nil {
		t.Fatal(err)
	}
	files := listDir(t, dir)
	if got := strings.Join(names(files), " "); got != stamp+".json latest.json latest.md latest.png" {
		t.Fatalf("a quiet run wrote %s; want its JSON and latest.{json,md,png}", got)
	}
	return files
}

// TestNoisySessionIsNotPublished: a noisy session is written under its own name, marked,
// and the latest quiet run stays latest.
func TestNoisySessionIsNotPublished(t *testing.T) {
	dir := t.TempDir()
	before := publishQuiet(t, dir, "2026-11-25T100000Z")
	written, err := Publish(dir, "2026-11-25T110000Z", guarded(true))
	if err != nil {
		t.Fatal(err)
	}
	after := listDir(t, dir)
	for _, n := range []string{"latest.json", "latest.md", "latest.png"} {
		if after[n] != before[n] {
			t.Errorf("a noisy run changed %s", n)
		}
	}
	if len(written) != 2 || !strings.HasPrefix(after["2026-11-25T110000Z-noisy.md"], "# AfterBurn benchmarks") ||
		!strings.Contains(after["2026-11-25T110000Z-noisy.json"], `"noisy_runs"`) {
		t.Errorf("a noisy run wrote %v, dir now %v; want 2026-11-25T110000Z-noisy.{json,md}", written, names(after))
	}
	if !strings.Contains(after["2026-11-25T110000Z-noisy.md"], "NOISY RUN, NOT PUBLISHED") {
		t.Errorf("the noisy run's markdown does not say so")
	}
}

// TestQuietSectionHasIsolationRows: the isolation scenario's runs (under load and paced) are
// judged by the guard, so its table has a row for each of them.
func TestQuietSectionHasIsolationRows(t *testing.T) {
	run := func(others float64) harness.LoadResult {
		return harness.LoadResult{RPS: 100, Requests: 1000, WrkCPUms: 100,
			Guard: &harness.Guard{Attempt: 1, OthersPct: others, KernelPct: 0.2, StealPct: 0, CalBeforeMs: 6, CalAfterMs: 6, WrkCPUPct: 10, WrkUsPerReq: 100}}
	}
	figs := func(runs ...harness.LoadResult) *harness.Figures { return &harness.Figures{Runs: runs} }
	r := &harness.Results{Isolation: &harness.Isolation{Functions: []*harness.IsolationFunction{
		{Name: "hello", Workload: harness.Hello,
			Figures: map[string]harness.ByConcurrency{harness.IsoRequest: {"c1": figs(run(0.5), run(0.7)), "c8": figs(run(0.1))}},
			Paced:   map[string]*harness.Figures{harness.IsoWarm: figs(run(0.3))}},
		{Name: "model", Workload: harness.Model,
			Figures: map[string]harness.ByConcurrency{harness.IsoRequest: {"c1": figs(run(1.5))}}},
	}}}
	r.Quiet = &harness.QuietSummary{Thresholds: harness.DefaultQuietThresholds, CPUs: "1", CalibrationWork: "SHA-256 of 8 MiB", BestCalibrationMs: 6, Runs: 5}
	var b bytes.Buffer
	quietSection(&b, r)
	mustContain(t, b.String(),
		"| python/iso-"+harness.IsoRequest+" | hello | 1 | 2 | 0.70 | 0.20 | 0.00 | 0.0 | 10 | 100.0 |",
		"| python/iso-"+harness.IsoRequest+" | hello | 8 | 1 | 0.10 |",
		"| python/iso-"+harness.IsoRequest+" | model | 1 | 1 | 1.50 |",
		"| python/iso-"+harness.IsoWarm+"-paced | hello | paced | 1 | 0.30 |",
	)
}
