package report

import (
	"bytes"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/afterburn-dev/afterburn/bench/internal/harness"
)

func sample() *harness.Results {
	f := func(rps float64) *harness.Figures {
		return &harness.Figures{RPS: harness.Spread{Median: rps, Min: rps, Max: rps, N: 1},
			P50us: harness.Spread{Median: 100, N: 1}, P99us: harness.Spread{Median: 300, N: 1}}
	}
	by := func(c1, c8 float64) harness.ByWorkload {
		return harness.ByWorkload{harness.Hello: {"c1": f(c1), "c8": f(c8)}}
	}
	l := &harness.LanguageResults{
		AfterBurn: by(6000, 8000), Fork: by(20, 25), Proxy: by(4000, 6000),
		Limit: by(7000, 9000), Ceiling: by(15000, 35000),
		Ratios:  []harness.Ratio{{Baseline: harness.Fork, Workload: harness.Hello, Concurrency: "c1", Ratio: harness.Spread{Median: 300, Min: 300, Max: 300, N: 1}}},
		Targets: []harness.Target{{Name: "hello c=1 throughput vs fork per request", Value: 300, Min: 300, Max: 300, Goal: ">= 300", Met: true}},
	}
	return &harness.Results{Date: "2026-11-22T10:00:00Z", Reps: 1, Duration: "3s", Order: []string{"java"},
		Languages: map[string]*harness.LanguageResults{"java": l}}
}

func TestMarkdownHasTheSeedsTable(t *testing.T) {
	var b bytes.Buffer
	Markdown(&b, sample())
	out := b.String()
	mustContain(t, out,
		"## java",
		"| hello | 1 | 20 | 6000 | 300× | 4000 | – |", // fork, AfterBurn, ratio to fork, proxy
		"| hello c=1 throughput vs fork per request | 300 | >= 300 | yes |",
	)
}

func TestMarkdownAppliesTheP99RuleToTheBaselines(t *testing.T) {
	r := sample()
	l := r.Languages["java"]
	l.Limit[harness.Hello]["c1"] = &harness.Figures{RPS: harness.Spread{Median: 7000, N: 1},
		P50us: harness.Spread{Median: 130, N: 1}, P99us: harness.Spread{Median: 3290, N: 1}}
	var b bytes.Buffer
	Markdown(&b, r)
	out := b.String()
	mustContain(t, out,
		"bare server hello 100 / 300 µs (rule 500): within",
		"pipe limit hello 130 / 3290 µs (rule 560): **over**",
	)
}

func TestMarkdownReportsTheFloor(t *testing.T) {
	r := sample()
	var b bytes.Buffer
	Markdown(&b, r)
	if strings.Contains(b.String(), "floor") {
		t.Errorf("markdown mentions a floor the run did not measure:\n%s", b.String())
	}
	l := r.Languages["java"]
	l.Floor = harness.ByWorkload{harness.Hello: {"c8": &harness.Figures{RPS: harness.Spread{Median: 7000, N: 1},
		P50us: harness.Spread{Median: 900, N: 1}, P99us: harness.Spread{Median: 2000, N: 1}}}}
	l.Ratios = append(l.Ratios, harness.Ratio{Baseline: harness.Floor, Workload: harness.Hello, Concurrency: "c8",
		Ratio: harness.Spread{Median: 0.9, Min: 0.9, Max: 0.9, N: 1}})
	l.FloorTargets = []harness.Target{{Name: "hello c8 throughput vs HTTP proxy mode", Value: 1.17, Min: 1.17, Max: 1.17, Goal: ">= 1.3"}}
	b.Reset()
	Markdown(&b, r)
	out := b.String()
	mustContain(t, out,
		"| hello | 8 | 7000 | 0.90× | 900 / 2000 |",
		"| hello c8 throughput vs HTTP proxy mode | 1.17 | >= 1.3 | **no** |",
	)
}

// mustContain fails the test for each of wants that the markdown lacks.
func mustContain(t *testing.T, out string, wants ...string) {
	t.Helper()
	for _, want := range wants {
		if !strings.Contains(out, want) {
			t.Errorf("markdown lacks %q:\n%s", want, out)
		}
	}
}

func TestChartIsAPNG(t *testing.T) {
	path := filepath.Join(t.TempDir(), "chart.png")
	if err := Chart(path, sample()); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("not a PNG: %v", err)
	}
	if b := img.Bounds(); b.Dx() < 600 || b.Dy() < 300 {
		t.Errorf("chart is %v; want a readable size", b)
	}
}
