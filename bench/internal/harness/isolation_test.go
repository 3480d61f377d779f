package harness

import (
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"
)

func isoSample() *Isolation {
	runs := func(rps ...float64) *Figures {
		f := &Figures{}
		for _, r := range rps {
			f.add(LoadResult{RPS: r, P50us: 1000, P99us: 2000})
		}
		return f
	}
	paced := func(p50s ...float64) *Figures {
		f := &Figures{}
		for _, p := range p50s {
			f.add(LoadResult{RPS: 50, P50us: p, P99us: 2 * p})
		}
		return f
	}
	loops := func(rates ...float64) []ForkLoop {
		var out []ForkLoop
		for _, r := range rates {
			out = append(out, ForkLoop{RoundsPerS: r, Rounds: 1})
		}
		return out
	}
	return &Isolation{ModelMiB: 512, Workers: 4, PacedRPS: 50, Functions: []*IsolationFunction{
		{Name: "hello", Workload: Hello,
			Figures:   map[string]ByConcurrency{IsoRequest: {"c1": runs(300, 310), "c8": runs(600, 520)}},
			Paced:     map[string]*Figures{IsoWarm: paced(800, 900), IsoRequest: paced(1200, 1400)},
			BareFloor: loops(1000, 1000), RequestFloor: loops(400, 400)},
		{Name: "model", Workload: Model,
			Figures:   map[string]ByConcurrency{IsoRequest: {"c1": runs(200, 200)}, IsoForkExec: {"c1": runs(2, 5)}},
			Paced:     map[string]*Figures{IsoWarm: paced(900, 900), IsoRequest: paced(2500, 2600)},
			BareFloor: loops(800, 800), RequestFloor: loops(300, 300)},
	}}
}

func TestIsolationTargets(t *testing.T) {
	got := map[string]Target{}
	for _, tg := range isolationTargets(isoSample()) {
		got[tg.Name] = tg
	}
	want := map[string]struct {
		value float64
		met   bool
	}{
		"hello c=1: request req/s ÷ bare fork loop":    {0.305, false},
		"hello c=8: request req/s ÷ bare fork loop":    {0.56, true}, // per repetition: 0.6 and 0.52
		"model c=1: request req/s ÷ bare fork loop":    {0.25, false},
		"model c=1: request req/s ÷ fork+exec":         {70, true},   // 100 and 40
		"hello paced 50/s: request p50 − warm p50, ms": {0.45, true}, // 0.4 and 0.5: the goal is met at 0.5
		"model paced 50/s: request p50 − warm p50, ms": {1.65, false},
	}
	for name, w := range want {
		tg, ok := got[name]
		if !ok {
			t.Errorf("no target %q; got %v", name, got)
			continue
		}
		if diff := tg.Value - w.value; diff > 1e-9 || diff < -1e-9 || tg.Met != w.met {
			t.Errorf("%s: value %v met %v; want %v %v", name, tg.Value, tg.Met, w.value, w.met)
		}
	}
	if len(got) != len(want) {
		t.Errorf("got %d targets; want %d: %v", len(got), len(want), got)
	}
}

func TestPacedLoadKeepsItsRate(t *testing.T) {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		w.Write([]byte("Hello, world!\n"))
	}))
	defer srv.Close()
	r, err := pacedLoad(srv.URL+"/", Hello, 100, 500*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	// 100/s for 0.5 s: at most 51 requests whatever the server's speed, the pace being the bound.
	if r.Requests < 1 || r.Requests > 51 || n.Load() != r.Requests || r.Errors != 0 {
		t.Fatalf("%d requests answered (%d seen, %d errors); want at most 51, all answered", r.Requests, n.Load(), r.Errors)
	}
	if r.P50us <= 0 || r.P99us < r.P50us {
		t.Fatalf("latencies p50 %v p99 %v", r.P50us, r.P99us)
	}
}
