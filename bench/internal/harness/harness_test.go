package harness

import (
	"errors"
	"math"
	"strings"
	"testing"
)

const wrkOutput = `Running 3s test @ http://127.0.0.1:45011/
  1 threads and 8 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency     1.02ms  400.12us   9.91ms   80.00%
    Req/Sec     7.60k   300.00     8.00k    70.00%
  Latency Distribution
     50%  940.00us
     75%    1.20ms
     90%    1.50ms
     99%    3.03ms
  22803 requests in 3.00s, 3.78MB read
  Socket errors: connect 0, read 2, write 0, timeout 1
  Non-2xx or 3xx responses: 4
Requests/sec:   7601.12
Transfer/sec:      1.26MB
`

func TestParseWrk(t *testing.T) {
	got, err := parseWrk(wrkOutput)
	if err != nil {
		t.Fatal(err)
	}
	want := LoadResult{RPS: 7601.12, P50us: 940, P99us: 3030, Errors: 7, Requests: 22803}
	if math.Abs(got.RPS-want.RPS) > 1e-9 || got.P50us != want.P50us || math.Abs(got.P99us-want.P99us) > 1e-9 ||
		got.Errors != want.Errors || got.Requests != want.Requests {
		t.Errorf("parseWrk = %+v; want %+v", got, want)
	}
}

// TestParseWrkNoRequests: a run that completed nothing is told apart, so a warm-up shorter
// than one slow request is not a failure.
func TestParseWrkNoRequests(t *testing.T) {
	text := "  0 requests in 1.00s, 0.00B read\nRequests/sec:      0.00\n"
	if _, err := parseWrk(text); !errors.Is(err, errNoRequests) {
		t.Errorf("parseWrk(no requests) error %v; want errNoRequests", err)
	}
}

func TestParseWrkRejectsOutputWithoutFigures(t *testing.T) {
	for _, text := range []string{"", "unable to connect to 127.0.0.1:1 Connection refused\n",
		"Requests/sec: 10\n"} { // no latency distribution: --latency was lost
		if _, err := parseWrk(text); err == nil {
			t.Errorf("parseWrk(%q): no error; want one", text)
		}
	}
}

func TestSpreadOf(t *testing.T) {
	for _, c := range []struct {
		in   []float64
		want Spread
	}{
		{[]float64{3, 1, 2}, Spread{Median: 2, Min: 1, Max: 3, N: 3}},
		{[]float64{4, 1, 3, 2}, Spread{Median: 2.5, Min: 1, Max: 4, N: 4}},
		{[]float64{7}, Spread{Median: 7, Min: 7, Max: 7, N: 1}},
	} {
		if got := spreadOf(c.in); got != c.want {
			t.Errorf("spreadOf(%v) = %+v; want %+v", c.in, got, c.want)
		}
	}
	if got := spreadOf(nil); !math.IsNaN(got.Median) {
		t.Errorf("spreadOf(nil).Median = %v; want NaN", got.Median)
	}
}

// figs builds figures from per-repetition requests/s at one latency.
func figs(p50, p99 float64, rps ...float64) *Figures {
	f := &Figures{}
	for _, r := range rps {
		f.add(LoadResult{RPS: r, P50us: p50, P99us: p99})
	}
	return f
}

// TestRatiosArePerRepetition: a ratio pairs the runs of one repetition, so a slow repetition
// of both sides does not show up as spread.
func TestRatiosArePerRepetition(t *testing.T) {
	l := &LanguageResults{
		AfterBurn: ByWorkload{Hello: {"c1": figs(100, 200, 900, 450, 1000)}},
		Limit:     ByWorkload{Hello: {"c1": figs(90, 150, 1000, 500, 1000)}},
		Fork:      ByWorkload{}, Proxy: ByWorkload{}, Ceiling: ByWorkload{},
	}
	rs := ratios(l)
	if len(rs) != 1 {
		t.Fatalf("ratios = %+v; want one (hello c1 vs limit)", rs)
	}
	if want := (Spread{Median: 0.9, Min: 0.9, Max: 1, N: 3}); rs[0].Ratio != want {
		t.Errorf("ratio = %+v; want %+v", rs[0].Ratio, want)
	}
}

func TestTargets(t *testing.T) {
	l := &LanguageResults{
		AfterBurn: ByWorkload{Hello: {"c1": figs(100, 450, 800)}},
		WatchdogC: ByWorkload{Hello: {"c1": figs(90, 150, 1000)}},
		Limit:     ByWorkload{Hello: {"c1": figs(90, 150, 700)}},
		Fork:      ByWorkload{Hello: {"c1": figs(9000, 9000, 2)}},
		Proxy:     ByWorkload{Hello: {"c1": figs(200, 300, 700)}},
		Ceiling:   ByWorkload{},
		ColdStart: &ColdStart{LibraryCostMs: 20},
		Peers: []*PeerResults{
			{Key: "http.server", Stdlib: true, Own: true, Proxy: ByWorkload{Hello: {"c1": figs(200, 300, 700)}}},
			{Key: "uvicorn", Proxy: ByWorkload{Hello: {"c1": figs(200, 300, 500)}}},
		},
	}
	l.Ratios = ratios(l)
	l.Headline = headlines(l)
	met := map[string]bool{}
	for _, tg := range targets("python", l) {
		met[tg.Name] = tg.Met
	}
	for name, want := range map[string]bool{
		"hello c=1 throughput vs the watchdog with the C child":                true,  // 0.8 >= 0.75
		"hello c1 throughput vs the strongest peer behind the proxy (uvicorn)": true,  // 1.6 >= 1.3
		"hello c=1 p99 µs (goal 2×p50 + 300 µs)":                               true,  // 450 <= 500
		"cold start cost of the library, ms":                                   false, // 20 > 15
	} {
		got, ok := met[name]
		if !ok {
			t.Errorf("no target %q in %v", name, met)
		} else if got != want {
			t.Errorf("target %q met = %v; want %v", name, got, want)
		}
	}
	for name := range met {
		if strings.Contains(name, "fork") || strings.Contains(name, "pipe limit") {
			t.Errorf("target %q: the fork and limit goals measured their baselines, not AfterBurn (bench/README.md)", name)
		}
		if strings.Contains(name, "proxy mode") || strings.Contains(name, "http.server") {
			t.Errorf("target %q: a goal against the standard library's server nobody deploys (issue 30)", name)
		}
	}
}

// TestListeningLineIsThePrograms: a proxy passes its upstream's log through, and the
// upstream says "listening on" first; the harness must take the proxy's own address.
func TestListeningLineIsThePrograms(t *testing.T) {
	log := "server: listening on 127.0.0.1:1111\nhttp-proxy: listening on 127.0.0.1:2222\n"
	m := listeningLine("http-proxy").FindStringSubmatch(log)
	if m == nil || m[1] != "127.0.0.1:2222" {
		t.Errorf("got %v; want the proxy's 127.0.0.1:2222", m)
	}
	if m := listeningLine("server").FindStringSubmatch("http-server: listening on 127.0.0.1:3\n"); m != nil {
		t.Errorf("matched another program's line: %v", m)
	}
}

// TestFloorIsMeasuredAgainstTheSameGoals: the floor gets AfterBurn's ratio to it, and the
// throughput and tail goals applied in AfterBurn's place, from its own repetitions.
func TestFloorIsMeasuredAgainstTheSameGoals(t *testing.T) {
	l := &LanguageResults{
		AfterBurn: ByWorkload{Hello: {"c1": figs(100, 900, 600, 700, 500)}},
		Floor:     ByWorkload{Hello: {"c1": figs(100, 300, 800, 700, 1000)}},
		WatchdogC: ByWorkload{Hello: {"c1": figs(90, 150, 1000, 1000, 1000)}},
		Proxy:     ByWorkload{Hello: {"c1": figs(200, 300, 600, 500, 800)}},
		Fork:      ByWorkload{}, Ceiling: ByWorkload{},
		ColdStart: &ColdStart{LibraryCostMs: 20},
		Peers:     []*PeerResults{{Key: "http", Own: true, Proxy: ByWorkload{Hello: {"c1": figs(200, 300, 600, 500, 800)}}}},
	}
	l.Ratios = ratios(l)
	s, ok := findRatio(l, Floor, Hello, "c1")
	if want := (Spread{Median: 0.75, Min: 0.5, Max: 1, N: 3}); !ok || s != want {
		t.Errorf("AfterBurn ÷ floor = %+v, %v; want %+v", s, ok, want)
	}
	got := map[string]Target{}
	for _, tg := range floorTargets("node", l) {
		got[tg.Name] = tg
	}
	for name, want := range map[string]struct {
		value float64
		met   bool
	}{
		"hello c=1 throughput vs the watchdog with the C child":             {0.8, true},   // floor ÷ it 0.8, 0.7, 1.0: median 0.8 >= 0.7
		"hello c1 throughput vs the strongest peer behind the proxy (http)": {1.333, true}, // 1.333, 1.4, 1.25: median 1.333 >= 1.3
		"hello c=1 p99 µs (goal 2×p50 + 300 µs)":                            {300, true},   // the floor's own tail, 300 <= 500
	} {
		if tg, ok := got[name]; !ok {
			t.Errorf("no floor target %q in %v", name, got)
		} else if math.Abs(tg.Value-want.value) > 0.001 || tg.Met != want.met {
			t.Errorf("floor target %q = %+v; want value %v, met %v", name, tg, want.value, want.met)
		}
	}
	if _, ok := got["cold start cost of the library, ms"]; ok {
		t.Errorf("floor targets include the cold start, which is the library's: %v", got)
	}
	l.Floor = nil
	if ft := floorTargets("node", l); ft != nil {
		t.Errorf("floorTargets without a floor = %v; want nil", ft)
	}
}
