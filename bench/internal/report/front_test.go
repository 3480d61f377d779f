package report

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"github.com/afterburn-dev/afterburn/bench/internal/harness"
)

// frontFigs are figures at hello c=8 with a run per repetition: requests/s, the tree's and
// the watchdog's CPU µs per request.
func frontFigs(c string, runs ...[3]float64) harness.ByWorkload {
	f := &harness.Figures{}
	var rps []float64
	for _, r := range runs {
		f.Runs = append(f.Runs, harness.LoadResult{RPS: r[0], Requests: 1000,
			Host:  &harness.HostCost{Requests: 1000, Tree: harness.PerRequest{CPUus: r[1]}, Front: harness.PerRequest{CPUus: r[2]}},
			Guard: &harness.Guard{Attempt: 1, OthersPct: 0.5, CalBeforeMs: 6, CalAfterMs: 6, WrkCPUPct: 40, WrkUsPerReq: 20}})
		rps = append(rps, r[0])
	}
	slices.Sort(rps)
	f.RPS = harness.Spread{Median: rps[len(rps)/2], Min: rps[0], Max: rps[len(rps)-1], N: len(rps)}
	f.Host = &harness.HostSpread{TreeCPUus: harness.Spread{Median: runs[len(runs)/2][1], N: len(runs)},
		FrontCPUus: harness.Spread{Median: runs[len(runs)/2][2], N: len(runs)}}
	return harness.ByWorkload{harness.Hello: {c: f}}
}

func frontSample() *harness.Front {
	wd := []string{"go/bin/afterburn-watchdog", "-port", "0", "-workers", "2"}
	cmd := func(off bool, worker ...string) []string {
		out := append([]string(nil), wd...)
		if off {
			out = append(out, "-front", "off")
		}
		return append(append(out, "--"), worker...)
	}
	f := &harness.Front{
		CChild: &harness.FrontPair{Key: harness.FrontCChild, FrontKey: "front/watchdog-c", NetHTTPKey: "front/watchdog-c-net-http",
			FrontCommand: cmd(false, "bench/bin/c-child"), NetHTTPCommand: cmd(true, "bench/bin/c-child"),
			Front:   frontFigs("c8", [3]float64{40000, 25, 12}, [3]float64{50000, 20, 12}, [3]float64{50000, 20, 12}),
			NetHTTP: frontFigs("c8", [3]float64{40000, 25, 20}, [3]float64{40000, 25, 20}, [3]float64{25000, 40, 21})},
		// The slower C child, 12k → 15k: 16.7 µs saved, reported, not judged.
		CChildBusy: &harness.FrontPair{Key: harness.FrontCChildBusy, FrontKey: "front/watchdog-c-busy", NetHTTPKey: "front/watchdog-c-busy-net-http",
			FrontCommand: cmd(false, "bench/bin/c-child"), NetHTTPCommand: cmd(true, "bench/bin/c-child"), Env: []string{"C_CHILD_BUSY_NS=4000"},
			Front:   frontFigs("c8", [3]float64{15000, 60, 12}, [3]float64{15000, 60, 12}, [3]float64{15000, 60, 12}),
			NetHTTP: frontFigs("c8", [3]float64{12000, 70, 20}, [3]float64{12000, 70, 20}, [3]float64{12000, 70, 20})},
		Order: []string{"go", "java"},
		Languages: map[string]*harness.FrontLanguage{
			"go": {FrontPair: harness.FrontPair{Key: "go", FrontKey: "front/go/afterburn", NetHTTPKey: "front/go/afterburn-net-http",
				FrontCommand: cmd(false, "bench/bin/go-afterburn"), NetHTTPCommand: cmd(true, "bench/bin/go-afterburn"),
				Front:   frontFigs("c8", [3]float64{20000, 50, 10}, [3]float64{20000, 50, 10}, [3]float64{20000, 50, 10}),
				NetHTTP: frontFigs("c8", [3]float64{16000, 62, 18}, [3]float64{16000, 62, 18}, [3]float64{16000, 62, 18})}},
			"java": {FrontPair: harness.FrontPair{Key: "java", FrontKey: "front/java/afterburn", NetHTTPKey: "front/java/afterburn-net-http",
				FrontCommand: cmd(false, "java", "AfterBurnFn"), NetHTTPCommand: cmd(true, "java", "AfterBurnFn"),
				Front:   frontFigs("c8", [3]float64{9000, 110, 10}, [3]float64{9000, 110, 10}, [3]float64{9000, 110, 10}),
				NetHTTP: frontFigs("c8", [3]float64{10000, 100, 18}, [3]float64{10000, 100, 18}, [3]float64{10000, 100, 18})}},
		},
	}
	// wrk's wake-ups per request, front and -front off, in the C child's three repetitions
	// (avoided: 0.2, 0.3, 0.1) and go's (0.25 each time), a wake-up costing 8 µs.
	setWakes := func(b harness.ByWorkload, wakes ...float64) {
		for i, x := range wakes {
			b[harness.Hello]["c8"].Runs[i].Host.LoadWakeIPIs = &x
		}
	}
	setWakes(f.CChild.Front, 0.2, 0.1, 0.3)
	setWakes(f.CChild.NetHTTP, 0.4, 0.4, 0.4)
	setWakes(f.Languages["go"].Front, 0.25, 0.25, 0.25)
	setWakes(f.Languages["go"].NetHTTP, 0.5, 0.5, 0.5)
	f.WakeCostUs = 8
	f.Judge()
	return f
}

// TestMarkdownReportsTheFront: a row per configuration both ways with front ÷ net/http as
// median [min, max] (front over net/http, not the inverse), the CPU per request, every
// language's rise against the C child's saving, the goals, the verdict naming the language that
// missed, and the exact -front off command lines.
func TestMarkdownReportsTheFront(t *testing.T) {
	r := sample()
	r.Front = frontSample()
	var b bytes.Buffer
	Markdown(&b, r)
	out := b.String()
	mustContain(t, out,
		"## The front: every language with the watchdog's front and with `-front off` (issue 29)",
		// ratios 1, 1.25, 2; time saved 0, 5, 20; tree CPU saved 0, 5, 20; watchdog 8, 8, 9
		"| watchdog + C child | hello | 8 | 50000 (40000–50000) | 40000 (25000–40000) | 1.25× [1.00, 2.00] | 5.00 [0.00, 20.0] | 20.0 / 25.0 | 5.00 [0.00, 20.0] | 12.0 / 20.0 | 8.00 [8.00, 9.00] |",
		"| go | hello | 8 | 20000 (20000–20000) | 16000 (16000–16000) | 1.25× [1.25, 1.25] | 12.5 [12.5, 12.5] | 50.0 / 62.0 | 12.0 [12.0, 12.0] | 10.0 / 18.0 | 8.00 [8.00, 8.00] |",
		"| java | hello | 8 | 9000 (9000–9000) | 10000 (10000–10000) | 0.90× [0.90, 0.90] |",
		"| watchdog + slower C child | hello | 8 | 15000 (15000–15000) | 12000 (12000–12000) | 1.25× [1.25, 1.25] | 16.7 [16.7, 16.7] |",
		// go saved 12.5 each time against the C child's 0, 5, 20: 12.5, 7.5, -7.5
		"| go | hello | 12.5 / 5.00 | 7.50 [-7.50, 12.5] | – | 0.40 [-0.40, 1.20] | 7.90 [-8.70, 12.1] |",
		// wake-ups avoided: the C child's 0.2 [0.1, 0.3], go's 0.25, java's uncounted; go less the C child, per
		// repetition: (0.05, -0.05, 0.15) × 8 µs; beside them 12.5-0.4, 7.5+0.4, -7.5-1.2
		"| 5.00 [0.00, 20.0] | 12.0 / 20.0 | 8.00 [8.00, 9.00] | 0.200 [0.100, 0.300] |",
		"| 10.0 / 18.0 | 8.00 [8.00, 8.00] | 0.250 [0.250, 0.250] |",
		"One such wake-up costs the CPU under test 8.00 µs here",
		"| go | hello c=8 req/s, front ÷ -front off | 1.25 | >= 1 | yes |",
		"| go | hello c=8 time per request saved, µs, less the watchdog + C child's, wrk's wake-ups aside | 7.90 (-8.70–12.1) | >= 0 | yes |",
		"| java | hello c=8 req/s, front ÷ -front off | 0.90 | >= 1 | **no** |",
		"Issue 29's language goal: **not met** in java.",
		"- watchdog + C child: `go/bin/afterburn-watchdog -port 0 -workers 2 -front off -- bench/bin/c-child`",
		"- watchdog + slower C child: `go/bin/afterburn-watchdog -port 0 -workers 2 -front off -- bench/bin/c-child` (in its environment, `C_CHILD_BUSY_NS=4000`)",
		"- go: `go/bin/afterburn-watchdog -port 0 -workers 2 -front off -- bench/bin/go-afterburn`",
		"- java: `go/bin/afterburn-watchdog -port 0 -workers 2 -front off -- java AfterBurnFn`")

	delete(r.Front.Languages, "java")
	r.Front.Order = []string{"go"}
	b.Reset()
	Markdown(&b, r)
	mustContain(t, b.String(), "Issue 29's language goal: **met** in every language measured.")
}

// TestFrontOnlyRunIsPublishedAsLatestFront: a run of the front scenario alone writes
// latest-front.*, never latest.*.
func TestFrontOnlyRunIsPublishedAsLatestFront(t *testing.T) {
	dir := t.TempDir()
	r := guarded(false)
	r.Order, r.Languages, r.Hop = nil, nil, nil
	r.Front = frontSample()
	var b bytes.Buffer
	Markdown(&b, r)
	// Every configuration of the scenario in the quiet-run guard's table, under its own key.
	mustContain(t, b.String(), "| front/watchdog-c | hello | 8 | 3 |", "| front/watchdog-c-net-http | hello | 8 | 3 |",
		"| front/go/afterburn | hello | 8 | 3 |", "| front/java/afterburn-net-http | hello | 8 | 3 |",
		"| front/watchdog-c-busy | hello | 8 | 3 |", "| front/watchdog-c-busy-net-http | hello | 8 | 3 |")
	if got := OnlyScenarios(r); got != "front" {
		t.Errorf("OnlyScenarios = %q; want front", got)
	}
	stamp := "2026-11-29T030000Z-front"
	if _, err := Publish(dir, stamp, r); err != nil {
		t.Fatal(err)
	}
	files := listDir(t, dir)
	if got, want := strings.Join(names(files), " "), stamp+".json latest-front.json latest-front.md"; got != want {
		t.Errorf("wrote %s; want %s", got, want)
	}
	if !strings.Contains(files["latest-front.md"], "## The front:") || !strings.Contains(files["latest-front.json"], `"rps_front_over_net_http"`) {
		t.Errorf("latest-front.* lack the front scenario")
	}
}
