package report

import (
	"fmt"
	"io"
	"strings"

	"github.com/afterburn-dev/afterburn/bench/internal/harness"
)

// forkMode reports the fork-mode scenario (harness/forkmode.go): the tree's memory per pool,
// throughput and tails of exec and fork side by side, crash to answering, and issue 19's goals.
func forkMode(w io.Writer, f *harness.ForkMode) {
	if f == nil {
		return
	}
	fmt.Fprintf(w, "## Python fork mode: exec against fork, %d MiB synthetic model\n\n", f.ModelMiB)
	fmt.Fprintf(w, "`functions/python/model_fn.py` writes a model of %d MiB at start-up (anonymous, private-dirty pages); "+
		"GET /model reads a sample spread over all of it. Each pool is the watchdog with `-spawn exec` or `-spawn fork`. "+
		"PSS is the sum of `Pss:` in /proc/PID/smaps_rollup over the watchdog and every process below it (the template "+
		"included), read after %d model requests; RSS counts shared pages once per process.\n\n", f.ModelMiB, f.Requests)
	fmt.Fprintln(w, "| workers | exec PSS MiB | fork PSS MiB | fork ÷ exec | exec RSS MiB | fork RSS MiB |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|")
	for _, p := range f.Pools {
		if p.Spawn != harness.SpawnExec {
			continue
		}
		fk := f.Pool(harness.SpawnFork, p.Workers)
		if fk == nil || p.Memory == nil || fk.Memory == nil {
			continue
		}
		fmt.Fprintf(w, "| %d | %.0f | %.0f | %.2f | %.0f | %.0f |\n", p.Workers, p.Memory.PSSMiB, fk.Memory.PSSMiB,
			fk.Memory.PSSMiB/p.Memory.PSSMiB, p.Memory.RSSMiB, fk.Memory.RSSMiB)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| workload | c | workers | exec req/s | fork req/s | fork ÷ exec | exec p50/p99 µs | fork p50/p99 µs |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|")
	for _, r := range f.Ratios {
		ex, fk := f.Pool(harness.SpawnExec, r.Workers), f.Pool(harness.SpawnFork, r.Workers)
		a, b := ex.Figures[r.Workload][r.Concurrency], fk.Figures[r.Workload][r.Concurrency]
		fmt.Fprintf(w, "| %s | %s | %d | %s | %s | %s | %s | %s |\n", r.Workload, strings.TrimPrefix(r.Concurrency, "c"), r.Workers,
			rps(a), rps(b), times(r.Ratio, true), lat(a), lat(b))
	}
	fmt.Fprintln(w)
	for _, c := range f.Crash {
		fmt.Fprintf(w, "Crash to answering, %s, %d worker: %.1f ms median (%.1f–%.1f) over %d crashes (SIGKILL of the worker that "+
			"answered GET /pid, to the first answer from another pid).\n\n", c.Spawn, c.Workers, c.Ms.Median, c.Ms.Min, c.Ms.Max, c.Ms.N)
	}
	fmt.Fprintln(w, "| target | this run | goal | met |")
	fmt.Fprintln(w, "|---|---|---|---|")
	targetRows(w, f.Targets)
	fmt.Fprintln(w)
}
