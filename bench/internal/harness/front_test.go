package harness

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// frontRoot is a repository root where the C relay and child "are built" (hopConfigs checks
// they exist) and nothing else is.
func frontRoot(t *testing.T) string {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "bench/bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{cRelayBin, cChildBin} {
		if err := os.WriteFile(filepath.Join(root, f), nil, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// TestFrontConfigsEveryLanguageBothWays: the C child's pair is the hop's watchdog-c and
// watchdog-c-net-http; the slower C child's the same command lines with C_CHILD_BUSY_NS in the
// environment; then every language asked for, in order, its AfterBurn function at the
// library's defaults behind the languages scenario's watchdog, and behind the same command
// line with "-front off" before the "--" (the exact command lines).
func TestFrontConfigsEveryLanguageBothWays(t *testing.T) {
	root := frontRoot(t)
	o := Options{Root: root, Watchdog: "go/bin/afterburn-watchdog", Workers: 2}
	pairs, err := frontConfigs(o, Languages(root))
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, p := range pairs {
		keys = append(keys, p.key)
	}
	if got, want := strings.Join(keys, " "), "c-child c-child-busy go python node java"; got != want {
		t.Fatalf("pairs %s; want %s", got, want)
	}
	wd := []string{"go/bin/afterburn-watchdog", "-port", "0", "-metrics_port", "0", "-listen_host", "127.0.0.1", "-workers", "2"}
	off := append(slices.Clone(wd), "-front", "off")
	line := func(parts ...[]string) string {
		var all []string
		for _, p := range parts {
			all = append(all, p...)
		}
		return strings.Join(all, " ")
	}
	want := map[string][2]string{
		FrontCChild:     {line(wd, []string{"--", "bench/bin/c-child"}), line(off, []string{"--", "bench/bin/c-child"})},
		FrontCChildBusy: {line(wd, []string{"--", "bench/bin/c-child"}), line(off, []string{"--", "bench/bin/c-child"})},
		"go":            {line(wd, []string{"--", "bench/bin/go-afterburn"}), line(off, []string{"--", "bench/bin/go-afterburn"})},
		"python": {line(wd, []string{"--", "python/.venv/bin/python", "bench/functions/python/afterburn_fn.py"}),
			line(off, []string{"--", "python/.venv/bin/python", "bench/functions/python/afterburn_fn.py"})},
		"node": {line(wd, []string{"--", "node", "bench/functions/node/afterburn_fn.js"}),
			line(off, []string{"--", "node", "bench/functions/node/afterburn_fn.js"})},
		// No classpath file in the test's root: the library's jars are "".
		"java": {line(wd, []string{"--", "java", "-XX:+UseSerialGC", "-Xmn32m", "-cp", "bench/build/java:", "AfterBurnFn"}),
			line(off, []string{"--", "java", "-XX:+UseSerialGC", "-Xmn32m", "-cp", "bench/build/java:", "AfterBurnFn"})},
	}
	for _, p := range pairs {
		if got := strings.Join(p.front.argv, " "); got != want[p.key][0] {
			t.Errorf("%s with the front: %s\nwant %s", p.key, got, want[p.key][0])
		}
		if got := strings.Join(p.netHTTP.argv, " "); got != want[p.key][1] {
			t.Errorf("%s with -front off: %s\nwant %s", p.key, got, want[p.key][1])
		}
		if !p.front.pool || !p.netHTTP.pool || p.front.key == p.netHTTP.key {
			t.Errorf("%s: both sides must be watchdog pools of distinct keys: %+v %+v", p.key, p.front, p.netHTTP)
		}
		wantEnv := ""
		if p.key == FrontCChildBusy {
			wantEnv = fmt.Sprintf("C_CHILD_BUSY_NS=%d", frontBusyNs)
		}
		if got := strings.Join(p.front.env, " ") + "|" + strings.Join(p.netHTTP.env, " "); got != wantEnv+"|"+wantEnv {
			t.Errorf("%s: environment %q; want %q both ways", p.key, got, wantEnv)
		}
	}
	if pairs[0].front.key != "front/"+string(WatchdogC) || pairs[0].netHTTP.key != "front/"+string(WatchdogCNetHTTP) {
		t.Errorf("the C child's pair is %s / %s; want the hop's %s / %s under front/", pairs[0].front.key, pairs[0].netHTTP.key, WatchdogC, WatchdogCNetHTTP)
	}
	if pairs[1].front.key != "front/watchdog-c-busy" || pairs[1].netHTTP.key != "front/watchdog-c-busy-net-http" {
		t.Errorf("the slower C child's keys %s / %s", pairs[1].front.key, pairs[1].netHTTP.key)
	}
	if pairs[2].front.key != "front/go/afterburn" || pairs[2].netHTTP.key != "front/go/afterburn-net-http" {
		t.Errorf("go's keys %s / %s", pairs[2].front.key, pairs[2].netHTTP.key)
	}
	if pairs[5].front.warmup != Languages(root)[3].Warmup || pairs[5].netHTTP.warmup != pairs[5].front.warmup {
		t.Errorf("java's pair is not warmed up as the languages scenario's java is")
	}
	// The languages scenario's AfterBurn configuration is the front's very command line.
	for _, c := range mustBuildConfigs(t, o) {
		if c.key == "go/afterburn" && strings.Join(c.argv, " ") != want["go"][0] {
			t.Errorf("the languages scenario's go/afterburn %v differs from the front scenario's", c.argv)
		}
	}

	// LANGS=python: only the C children and Python.
	var py []Language
	for _, l := range Languages(root) {
		if l.Name == "python" {
			py = append(py, l)
		}
	}
	pairs, err = frontConfigs(o, py)
	if err != nil {
		t.Fatal(err)
	}
	if len(pairs) != 3 || pairs[0].key != FrontCChild || pairs[1].key != FrontCChildBusy || pairs[2].key != "python" {
		t.Errorf("LANGS=python: %d pairs; want the C children's and python's", len(pairs))
	}
}

func mustBuildConfigs(t *testing.T, o Options) []*config {
	var langs []Language
	for _, l := range Languages(o.Root) {
		if l.Name == "go" {
			langs = append(langs, l)
		}
	}
	cs, err := buildConfigs(o, langs)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// TestFrontSidesAlternate: the front first in odd repetitions, -front off first in even ones.
func TestFrontSidesAlternate(t *testing.T) {
	p := &frontPairConfig{front: &config{key: "f"}, netHTTP: &config{key: "n"}}
	for rep, want := range map[int]string{1: "f n", 2: "n f", 3: "f n"} {
		var got []string
		for _, c := range p.sides(rep) {
			got = append(got, c.key)
		}
		if strings.Join(got, " ") != want {
			t.Errorf("rep %d: %v; want %s", rep, got, want)
		}
	}
}

// TestFrontMeasuresPairsInterleaved: the scenario's repetitions, through the languages
// scenario's measureRepetitions, measure for each workload and concurrency pair after pair,
// the front first in odd repetitions and -front off first in even ones; every run joins its
// configuration's figures, and the log pads the key to the front's width.
func TestFrontMeasuresPairsInterleaved(t *testing.T) {
	quiet := synthetic{busy1: 250, tree: 2480 * time.Millisecond, requests: 30000, cal: [2]time.Duration{6 * time.Millisecond, 6 * time.Millisecond}}
	var measured []string
	q := syntheticGuard()
	q.observe = func(s *server, _ func() (LoadResult, error)) (LoadResult, window, error) {
		measured = append(measured, s.name)
		w, r := quiet.window(t)
		return r, w, nil
	}
	cfg := func(key string) *config { return &config{key: key, srv: &server{name: key}, figs: newByWorkload()} }
	pairs := []*frontPairConfig{{key: "a", front: cfg("a"), netHTTP: cfg("a-off")}, {key: "b", front: cfg("b"), netHTTP: cfg("b-off")}}
	var log strings.Builder
	o := Options{Reps: 2, Workloads: []Workload{Hello, Echo1K}, Conns: []int{1, 8}, Log: &log}
	if err := measureRepetitions(o, Load{}, q, func(rep int) []*config { return frontRepetition(pairs, rep) }, 24); err != nil {
		t.Fatal(err)
	}
	odd, even := "a a-off b b-off", "a-off a b-off b"
	var want []string
	for _, rep := range []string{odd, even} {
		for range len(o.Workloads) * len(o.Conns) {
			want = append(want, rep)
		}
	}
	if got := strings.Join(measured, " "); got != strings.Join(want, " ") {
		t.Errorf("measured %s\nwant     %s", got, strings.Join(want, " "))
	}
	for _, p := range pairs {
		for _, c := range []*config{p.front, p.netHTTP} {
			for _, w := range o.Workloads {
				for _, n := range []string{"c1", "c8"} {
					if f := c.figs[w][n]; f == nil || len(f.Runs) != o.Reps {
						t.Errorf("%s %s %s: figures %+v; want a run per repetition", c.key, w, n, f)
					}
				}
			}
		}
	}
	first, _, _ := strings.Cut(log.String(), "\n")
	if prefix := fmt.Sprintf("rep 1/2 hello   c=1 %-24s     10000 req/s ", "a"); !strings.HasPrefix(first, prefix) {
		t.Errorf("first log line %q; want it to start %q", first, prefix)
	}
}

// frontFigs are figures of one workload and concurrency, a run per repetition, with the
// tree's and the watchdog's CPU µs per request.
func frontFigs(w Workload, c string, runs ...[3]float64) ByWorkload {
	b := newByWorkload()
	for _, r := range runs {
		b.figures(w, c).add(LoadResult{RPS: r[0], Requests: 1000,
			Host: &HostCost{Requests: 1000, Tree: PerRequest{CPUus: r[1]}, Front: PerRequest{CPUus: r[2]}}})
	}
	return b
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

// TestFrontJudge: ratios are front ÷ net/http per repetition (not the inverse), time saved is
// 1e6/req/s off less on, CPU saved off less on; a language's rise is set against the C child's
// saving of the same repetition; the goal per language at c=8.
func TestFrontJudge(t *testing.T) {
	c8 := FrontGoalConcurrency
	f := &Front{
		// The C child: 40k → 50k, 40k → 40k, 25k → 50k: ratios 1.25, 1, 2; saved 5, 0, 20 µs.
		CChild: &FrontPair{Key: FrontCChild,
			Front:   frontFigs(Hello, c8, [3]float64{50000, 20, 12}, [3]float64{40000, 25, 15}, [3]float64{50000, 20, 12}),
			NetHTTP: frontFigs(Hello, c8, [3]float64{40000, 25, 20}, [3]float64{40000, 25, 20}, [3]float64{25000, 40, 21})},
		Order: []string{"go", "java", "node"},
		Languages: map[string]*FrontLanguage{
			// go: 16k → 20k each time: ratio 1.25, saved 12.5 µs, above the C child's 5, 0, 20
			// by 7.5, 12.5, -7.5 (median 7.5).
			"go": {FrontPair: FrontPair{Key: "go",
				Front:   frontFigs(Hello, c8, [3]float64{20000, 50, 10}, [3]float64{20000, 50, 10}, [3]float64{20000, 50, 10}),
				NetHTTP: frontFigs(Hello, c8, [3]float64{16000, 62, 18}, [3]float64{16000, 62, 18}, [3]float64{16000, 62, 18})}},
			// java: rises, but by less than the watchdog's saving: 10k → 10.1k, ~0.99 µs.
			"java": {FrontPair: FrontPair{Key: "java",
				Front:   frontFigs(Hello, c8, [3]float64{10100, 99, 10}, [3]float64{10100, 99, 10}, [3]float64{10100, 99, 10}),
				NetHTTP: frontFigs(Hello, c8, [3]float64{10000, 100, 18}, [3]float64{10000, 100, 18}, [3]float64{10000, 100, 18})}},
			// node: lower with the front.
			"node": {FrontPair: FrontPair{Key: "node",
				Front:   frontFigs(Hello, c8, [3]float64{9000, 110, 10}, [3]float64{9000, 110, 10}, [3]float64{9000, 110, 10}),
				NetHTTP: frontFigs(Hello, c8, [3]float64{10000, 100, 18}, [3]float64{10000, 100, 18}, [3]float64{10000, 100, 18})}},
		},
	}
	f.Judge()
	cc, ok := f.CChild.FindCompare(Hello, c8)
	if !ok {
		t.Fatal("no comparison for the C child")
	}
	if r := cc.RPSRatio; !near(r.Median, 1.25) || !near(r.Min, 1) || !near(r.Max, 2) || r.N != 3 {
		t.Errorf("C child front ÷ net/http = %+v; want 1.25 [1, 2] (front over net/http, per repetition)", r)
	}
	if s := cc.TimeSavedUs; !near(s.Median, 5) || !near(s.Min, 0) || !near(s.Max, 20) {
		t.Errorf("C child time saved = %+v; want 5 [0, 20] µs", s)
	}
	if s := cc.TreeCPUSavedUs; !near(s.Median, 5) || !near(s.Max, 20) {
		t.Errorf("C child tree CPU saved = %+v; want 5 [0, 20]", s)
	}
	if s := cc.WatchdogCPUSavedUs; !near(s.Median, 8) || !near(s.Min, 5) || !near(s.Max, 9) {
		t.Errorf("C child watchdog CPU saved = %+v; want 8 [5, 9]", s)
	}
	goCmp, _ := f.Languages["go"].FindCompare(Hello, c8)
	if !near(goCmp.RPSRatio.Median, 1.25) || !near(goCmp.TimeSavedUs.Median, 12.5) || !near(goCmp.WatchdogCPUSavedUs.Median, 8) {
		t.Errorf("go's comparison = %+v", goCmp)
	}
	rise := f.Languages["go"].RiseOverSaving
	if len(rise) != 1 || !near(rise[0].ExcessUs.Median, 7.5) || !near(rise[0].ExcessUs.Min, -7.5) || !near(rise[0].ExcessUs.Max, 12.5) {
		t.Errorf("go's rise over the saving = %+v; want 7.5 [-7.5, 12.5] µs", rise)
	}
	if rise[0].Share.N != 0 {
		t.Errorf("go's share = %+v; want none (the C child saved nothing in one repetition)", rise[0].Share)
	}
	met := func(lang string) []bool {
		var out []bool
		for _, tg := range f.Languages[lang].Targets {
			out = append(out, tg.Met)
		}
		return out
	}
	for lang, want := range map[string][]bool{"go": {true, true}, "java": {true, false}, "node": {false, false}} {
		if got := met(lang); !slices.Equal(got, want) {
			t.Errorf("%s targets met %v; want %v: %+v", lang, got, want, f.Languages[lang].Targets)
		}
	}
	if tg := f.Languages["java"].Targets[0]; !near(tg.Value, 1.01) || tg.Goal != ">= 1" {
		t.Errorf("java's ratio target = %+v; want 1.01, >= 1", tg)
	}
	if ok, missed := f.GoalMet(); ok || strings.Join(missed, " ") != "java node" {
		t.Errorf("GoalMet = %v %v; want false, java node", ok, missed)
	}
	delete(f.Languages, "java")
	delete(f.Languages, "node")
	f.Order = []string{"go", "python"} // python asked for, never measured
	if ok, missed := f.GoalMet(); ok || strings.Join(missed, " ") != "python" {
		t.Errorf("GoalMet with a language missing = %v %v; want false, python", ok, missed)
	}
	f.Order = []string{"go"}
	if ok, _ := f.GoalMet(); !ok {
		t.Errorf("GoalMet with go alone, every goal met = false")
	}
}

// TestFrontJudgeAgainstTheCChild: the slower C child's pair is compared both ways as the
// C child's is, and reported; every language is judged against the C child's saving.
func TestFrontJudgeAgainstTheCChild(t *testing.T) {
	c8 := FrontGoalConcurrency
	pair := func(on, off float64) FrontPair {
		return FrontPair{Front: frontFigs(Echo1K, c8, [3]float64{on, 20, 10}, [3]float64{on, 20, 10}),
			NetHTTP: frontFigs(Echo1K, c8, [3]float64{off, 25, 15}, [3]float64{off, 25, 15})}
	}
	cc, busy := pair(50000, 40000), pair(25000, 20000) // saved 5 and 10 µs
	f := &Front{CChild: &cc, CChildBusy: &busy, Order: []string{"java"},
		// java at 18k → 20k: 5.56 µs saved, 0.56 above the C child's 5 (and below the
		// slower child's 10, which is not judged).
		Languages: map[string]*FrontLanguage{"java": {FrontPair: pair(20000, 18000)}}}
	f.Judge()
	if b, ok := f.CChildBusy.FindCompare(Echo1K, c8); !ok || !near(b.TimeSavedUs.Median, 10) || !near(b.RPSRatio.Median, 1.25) {
		t.Errorf("the slower C child's comparison = %+v, %v; want 10 µs saved, 1.25×", b, ok)
	}
	j := f.Languages["java"].RiseOverSaving
	if len(j) != 1 || !near(j[0].ExcessUs.Median, 1e6/18000-1e6/20000-5) {
		t.Errorf("java's rise = %+v; want %.2f µs over the C child's saving", j, 1e6/18000-1e6/20000-5)
	}
	if ok, _ := f.GoalMet(); !ok {
		t.Errorf("GoalMet = false; java rose by more than the C child's saving: %+v", f.Languages["java"].Targets)
	}
}

// TestFrontJudgeNeedsEveryRepetition: a pair not measured in every repetition is not compared.
func TestFrontJudgeNeedsEveryRepetition(t *testing.T) {
	c8 := FrontGoalConcurrency
	f := &Front{
		CChild: &FrontPair{Front: frontFigs(Hello, c8, [3]float64{50000, 20, 12}), NetHTTP: frontFigs(Hello, c8, [3]float64{40000, 25, 20})},
		Order:  []string{"go"},
		Languages: map[string]*FrontLanguage{"go": {FrontPair: FrontPair{
			Front:   frontFigs(Hello, c8, [3]float64{20000, 50, 10}, [3]float64{20000, 50, 10}),
			NetHTTP: frontFigs(Hello, c8, [3]float64{16000, 62, 18})}}},
	}
	f.Judge()
	if l := f.Languages["go"]; len(l.Compare) != 0 || len(l.Targets) != 0 {
		t.Errorf("go compared with unpaired repetitions: %+v", l)
	}
	if ok, _ := f.GoalMet(); ok {
		t.Errorf("GoalMet with no target = true")
	}
}

// withWakes sets wrk's wake-ups per request of the runs of b at w and c, one per run.
func withWakes(b ByWorkload, w Workload, c string, wakes ...float64) ByWorkload {
	for i, x := range wakes {
		b[w][c].Runs[i].Host.LoadWakeIPIs = &x
	}
	return b
}

// TestFrontJudgeCountsWrkWakeUps: wrk's wake-ups avoided are -front off's less the front's,
// per repetition; the part of a language's rise over the C child's saving that they make is
// the difference of the two pairs' wake-ups avoided times one wake-up's cost, and the rest is
// beside it; the goal itself is judged on the time saved alone.
func TestFrontJudgeCountsWrkWakeUps(t *testing.T) {
	c8 := FrontGoalConcurrency
	pair := func(on, off float64, wakesOn, wakesOff [2]float64) FrontPair {
		return FrontPair{
			Front:   withWakes(frontFigs(Echo1K, c8, [3]float64{on, 20, 10}, [3]float64{on, 20, 10}), Echo1K, c8, wakesOn[:]...),
			NetHTTP: withWakes(frontFigs(Echo1K, c8, [3]float64{off, 25, 15}, [3]float64{off, 25, 15}), Echo1K, c8, wakesOff[:]...)}
	}
	// The C child saves 5 µs (40k → 50k) and 0.3, 0.1 wake-ups; java 4 µs (20k → 1e6/46 req/s)
	// and 0.2, 0.2.
	cc := pair(50000, 40000, [2]float64{0.2, 0.3}, [2]float64{0.5, 0.4})
	java := pair(1e6/46, 20000, [2]float64{0.3, 0.3}, [2]float64{0.5, 0.5})
	// node saves what java does, but avoids 0.1 and 0 wake-ups: its shortfall is wrk's.
	node := pair(1e6/46, 20000, [2]float64{0.4, 0.5}, [2]float64{0.5, 0.5})
	f := &Front{CChild: &cc, Order: []string{"java", "node"}, WakeCostUs: 7,
		Languages: map[string]*FrontLanguage{"java": {FrontPair: java}, "node": {FrontPair: node}}}
	f.Judge()
	c, _ := f.CChild.FindCompare(Echo1K, c8)
	if w := c.LoadWakesAvoided; w.N != 2 || !near(w.Min, 0.1) || !near(w.Max, 0.3) {
		t.Errorf("the C child's wake-ups avoided = %+v; want 0.1 and 0.3", w)
	}
	r := f.Languages["java"].RiseOverSaving
	if len(r) != 1 {
		t.Fatalf("java's rise = %+v", r)
	}
	// Per repetition: excess -1 µs both times; wake-ups (0.2-0.3)×7 = -0.7 and (0.2-0.1)×7 = 0.7;
	// beside them -0.3 and -1.7.
	if w := r[0].WakesUs; w.N != 2 || !near(w.Min, -0.7) || !near(w.Max, 0.7) {
		t.Errorf("java's rise from wrk's wake-ups = %+v; want -0.7 and 0.7 µs", w)
	}
	if b := r[0].BesideWakesUs; b.N != 2 || !near(b.Min, -1.7) || !near(b.Max, -0.3) {
		t.Errorf("java's rise beside wrk's wake-ups = %+v; want -1.7 and -0.3 µs", b)
	}
	// The goal is judged beside wrk's wake-ups: java's -1.0 µs misses it; node's -1 µs, of
	// which -1.4 and -0.7 are wake-ups (0.4 and -0.3 beside them, median 0.05), meets it.
	want := map[string]bool{"java": false, "node": true}
	for lang, met := range want {
		tg := f.Languages[lang].Targets
		if len(tg) != 2 || tg[1].Name != "echo1k c=8 time per request saved, µs, less the watchdog + C child's, wrk's wake-ups aside" ||
			tg[1].Met != met {
			t.Errorf("%s's targets = %+v; want the second beside wrk's wake-ups, met %v", lang, tg, met)
		}
	}
	if tg := f.Languages["node"].Targets[1]; !near(tg.Value, 0.05) || !near(tg.Min, -0.3) || !near(tg.Max, 0.4) {
		t.Errorf("node's rise beside wrk's wake-ups = %+v; want 0.05 [-0.3, 0.4]", tg)
	}
	if ok, missed := f.GoalMet(); ok || strings.Join(missed, " ") != "java" {
		t.Errorf("GoalMet = %v %v; want false, java (saved 1 µs less than the C child beside wrk's wake-ups)", ok, missed)
	}

	// Without the cost, or with a run that did not count wake-ups, none are set against the rise.
	f.WakeCostUs = 0
	f.Judge()
	if r := f.Languages["java"].RiseOverSaving[0]; r.WakesUs.N != 0 || r.BesideWakesUs.N != 0 {
		t.Errorf("rise without a wake-up cost = %+v; want no wake-up part", r)
	}
	// node is then judged on the plain difference, -1 µs: missed.
	if tg := f.Languages["node"].Targets[1]; tg.Name != "echo1k c=8 time per request saved, µs, less the watchdog + C child's" || tg.Met {
		t.Errorf("node's target without wake-ups counted = %+v; want the plain difference, missed", tg)
	}
	f.WakeCostUs = 7
	java.Front[Echo1K][c8].Runs[1].Host.LoadWakeIPIs = nil
	f.Judge()
	if c, _ := f.Languages["java"].FindCompare(Echo1K, c8); c.LoadWakesAvoided.N != 0 {
		t.Errorf("java's wake-ups avoided with one run uncounted = %+v; want none", c.LoadWakesAvoided)
	}
	if r := f.Languages["java"].RiseOverSaving[0]; r.WakesUs.N != 0 {
		t.Errorf("rise with one run uncounted = %+v; want no wake-up part", r)
	}
}
