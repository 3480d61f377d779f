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
		Limit: by(7000, 9000), Ceiling: by(15000, 35000), Relay: by(10000, 20000),
		Ratios: []harness.Ratio{
			{Baseline: harness.Fork, Workload: harness.Hello, Concurrency: "c1", Ratio: harness.Spread{Median: 300, Min: 300, Max: 300, N: 1}},
			{Baseline: harness.Relay, Workload: harness.Hello, Concurrency: "c1", Ratio: harness.Spread{Median: 0.6, Min: 0.55, Max: 0.7, N: 3}},
		},
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
		// AfterBurn, the relay and the ratio to it first, then fork and its ratio, proxy
		"| hello | 1 | 6000 | 10000 | 0.60× (0.55–0.70) | 20 | 300× | 4000 | – |",
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

// TestMarkdownReportsTheHop: the watchdog against the relay, what each configuration spent
// per request, and the watchdog's goals, before the languages.
func TestMarkdownReportsTheHop(t *testing.T) {
	r := sample()
	var b bytes.Buffer
	Markdown(&b, r)
	if strings.Contains(b.String(), "## The hop") {
		t.Errorf("markdown has a hop section the run did not measure:\n%s", b.String())
	}
	host := func(rps, treeCPU, frontCPU, cs, rw float64) *harness.Figures {
		return &harness.Figures{RPS: harness.Spread{Median: rps, N: 1},
			Host: &harness.HostSpread{TreeCPUus: harness.Spread{Median: treeCPU}, FrontCPUus: harness.Spread{Median: frontCPU},
				FrontCtxSwitch: harness.Spread{Median: cs}, FrontRWCalls: harness.Spread{Median: rw},
				TreeCtxSwitch: harness.Spread{Median: cs + 1}, TreeRWCalls: harness.Spread{Median: rw + 2}}}
	}
	r.Workers = 2
	r.Hop = &harness.Hop{
		Relay:            harness.ByWorkload{harness.Hello: {"c1": host(15500, 26, 20, 2, 4)}},
		WatchdogC:        harness.ByWorkload{harness.Hello: {"c1": host(12000, 55, 45, 4, 6.5)}},
		WatchdogCNetHTTP: harness.ByWorkload{harness.Hello: {"c1": host(10000, 66, 56, 5, 7.5)}},
		Limit:            harness.ByWorkload{}, Ceiling: harness.ByWorkload{},
		Ratios: []harness.Ratio{
			{Of: harness.WatchdogC, Baseline: harness.Relay, Workload: harness.Hello, Concurrency: "c1",
				Ratio: harness.Spread{Median: 0.774, Min: 0.75, Max: 0.8, N: 3}},
			{Of: harness.WatchdogCNetHTTP, Baseline: harness.Relay, Workload: harness.Hello, Concurrency: "c1",
				Ratio: harness.Spread{Median: 0.645, Min: 0.6, Max: 0.7, N: 3}},
		},
		FrontRatios: []harness.Ratio{{Of: harness.WatchdogC, Baseline: harness.WatchdogCNetHTTP, Workload: harness.Hello, Concurrency: "c1",
			Ratio: harness.Spread{Median: 1.2, Min: 1.15, Max: 1.25, N: 3}}},
		Targets: []harness.Target{{Name: "hello c1 watchdog + C child ÷ relay", Value: 0.774, Min: 0.75, Max: 0.8, Goal: ">= 0.9"}},
	}
	b.Reset()
	Markdown(&b, r)
	out := b.String()
	mustContain(t, out,
		"## The hop: the watchdog against the relay",
		"The watchdog (2 workers)",
		"with `-front off`",
		"| workload | c | relay req/s | watchdog + C child req/s | × relay | watchdog (net/http only) + C child req/s | × relay | "+
			"watchdog + Go limit child req/s | × relay | bare Go server req/s | × relay | front ÷ net/http |",
		"|---|---|---|---|---|---|---|---|---|---|---|---|",
		"| hello | 1 | 15500 | 12000 | 0.77× (0.75–0.80) | 10000 | 0.65× (0.60–0.70) | – | – | – | – | 1.20× (1.15–1.25) |",
		"| relay (C relay + C child) | hello | 1 | 26.0 | 20.0 | 2.00 | 4.00 | 3.00 | 6.00 |",
		"| watchdog + C child | hello | 1 | 55.0 | 45.0 | 4.00 | 6.50 | 5.00 | 8.50 |",
		"| watchdog (net/http only) + C child | hello | 1 | 66.0 | 56.0 | 5.00 | 7.50 | 6.00 | 9.50 |",
		"| goal of the watchdog (issue 29; front on) | this run | goal | met |",
		"| hello c1 watchdog + C child ÷ relay | 0.77 (0.75–0.80) | >= 0.9 | **no** |",
	)
	if strings.Index(out, "## The hop") > strings.Index(out, "## java") {
		t.Errorf("the hop comes after the languages; want it first:\n%s", out)
	}
}

// TestMarkdownReportsTheLibrarysCPUAboveTheCChild: per language, the library's own CPU per
// request above the C child's, with the two figures it is the difference of.
func TestMarkdownReportsTheLibrarysCPUAboveTheCChild(t *testing.T) {
	r := sample()
	r.Languages["java"].LibraryCPU = []harness.LibraryCPU{{Workload: harness.Hello, Concurrency: "c8",
		AfterBurnUs: harness.Spread{Median: 70, Min: 65, Max: 80, N: 3}, CChildUs: harness.Spread{Median: 25, Min: 24, Max: 27, N: 3},
		AboveUs: harness.Spread{Median: 45, Min: 40, Max: 55, N: 3}}}
	var b bytes.Buffer
	Markdown(&b, r)
	mustContain(t, b.String(),
		"| workload | c | AfterBurn CPU µs/req | watchdog + C child CPU µs/req | library above the C child, µs/req |",
		"| hello | 8 | 70.0 (65.0–80.0) | 25.0 (24.0–27.0) | 45.0 (40.0–55.0) |",
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
