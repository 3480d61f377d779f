package harness

import (
	"strings"
	"testing"
)

// TestModelSumIsWhatModelFnAnswers: model_fn.py's answer for 64 MiB, as the function printed it.
func TestModelSumIsWhatModelFnAnswers(t *testing.T) {
	if got := modelSum(64, 1024); got != 4290772992 {
		t.Errorf("modelSum(64, 1024) = %d; want 4290772992", got)
	}
	// A model smaller than the sample: every element, 0+1+...+(n-1).
	if got, n := modelSum(1, 1<<20), int64(1)<<17; got != n*(n-1)/2 {
		t.Errorf("modelSum(1, 2^20) = %d; want %d", got, n*(n-1)/2)
	}
}

func forkPool(spawn string, workers int, pssMiB float64, rps ...float64) *ForkPool {
	p := &ForkPool{Spawn: spawn, Workers: workers, Memory: &TreeMemory{PSSMiB: pssMiB}, Figures: newByWorkload()}
	for _, r := range rps {
		p.Figures.figures(Hello, "c8").add(LoadResult{RPS: r, P50us: 100, P99us: 200})
	}
	return p
}

// TestForkTargets: issue 19's goals. Fork with the most workers against exec with one; the
// fork pool's median crash time; fork ÷ exec throughput per repetition at each worker count.
func TestForkTargets(t *testing.T) {
	f := &ForkMode{
		Pools: []*ForkPool{
			forkPool(SpawnExec, 1, 600, 1000, 1000, 1000), forkPool(SpawnFork, 1, 610, 990, 1010, 960),
			forkPool(SpawnExec, 8, 4500, 2000, 2000, 2000), forkPool(SpawnFork, 8, 700, 1800, 1850, 1900),
		},
		Crash: []CrashFigures{
			{Spawn: SpawnExec, Workers: 1, Ms: Spread{Median: 900, Min: 850, Max: 990, N: 20}},
			{Spawn: SpawnFork, Workers: 1, Ms: Spread{Median: 12, Min: 9, Max: 30, N: 20}},
		},
	}
	f.Ratios = forkRatios(f)
	if len(f.Ratios) != 2 || f.Ratios[0].Workers != 1 || f.Ratios[0].Ratio.Median != 0.99 || f.Ratios[1].Ratio.Median != 0.925 {
		t.Fatalf("ratios = %+v; want fork ÷ exec per repetition: medians 0.99 at 1 worker, 0.925 at 8", f.Ratios)
	}
	got := map[string]Target{}
	for _, tg := range forkTargets(f) {
		got[tg.Name] = tg
	}
	for name, want := range map[string]struct {
		value float64
		met   bool
	}{
		"tree PSS, fork workers=8 ÷ exec workers=1": {700.0 / 600, true},
		"fork: median crash to answering, ms":       {12, true},
		"hello c=8 req/s, workers=1: fork ÷ exec":   {0.99, true},
		"hello c=8 req/s, workers=8: fork ÷ exec":   {0.925, false},
	} {
		tg, ok := got[name]
		if !ok {
			t.Errorf("no target %q in %v", name, got)
			continue
		}
		if tg.Value != want.value || tg.Met != want.met {
			t.Errorf("%s = %v, met %v; want %v, met %v", name, tg.Value, tg.Met, want.value, want.met)
		}
	}
	if len(got) != 4 {
		t.Errorf("%d targets; want 4 (the exec pool's crash time is information, not a goal)", len(got))
	}
}

func TestForkPoolKey(t *testing.T) {
	if got := (&ForkPool{Spawn: SpawnFork, Workers: 8}).Key(); !strings.HasPrefix(got, "python/model-fork-w8") {
		t.Errorf("Key = %q", got)
	}
}
