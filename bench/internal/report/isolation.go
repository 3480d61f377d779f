package report

import (
	"fmt"
	"io"

	"github.com/afterburn-dev/afterburn/bench/internal/harness"
)

// isolation reports the isolation scenario (harness/isolation.go): per function, the floors
// of a process per request, request mode, the warm pool and fork+exec side by side, the paced
// latencies, and issue 21's goals.
func isolation(w io.Writer, iso *harness.Isolation) {
	if iso == nil {
		return
	}
	fmt.Fprintf(w, "## Python isolation=request: a fresh fork per request (model %d MiB)\n\n", iso.ModelMiB)
	fmt.Fprintf(w, "Request mode is the watchdog with `-spawn fork -isolation request -workers %d` (%d spares); warm is "+
		"`-spawn exec -workers %d`; fork+exec is `cmd/fork-server` starting `functions/python/classic*.py` for every "+
		"request, the model written each time. The floors are `functions/python/forkloop.py` forking the same template "+
		"(its initialisation, `gc.freeze`): **bare** is fork, `_exit`, `waitpid`; **request** has the child serve one "+
		"GET / through the library's core first (no pipes, no watchdog); **double** forks the worker as §2.6 does (a middle "+
		"process that exits, the loop a child subreaper) and has it serve that request: the floor of isolation=request's "+
		"process structure. Everything runs on the CPUs under test, the floors too.\n\n", iso.Workers, iso.Workers, iso.Workers)
	fmt.Fprintln(w, "| function | c | bare loop/s | request loop/s | double loop/s | request req/s | warm req/s | fork+exec req/s | request p50/p99 µs | warm p50/p99 µs |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|---|")
	for _, f := range iso.Functions {
		bare, reqLoop, double := f.Floors()
		for _, c := range []string{"c1", "c8"} {
			rq, wm, fe := f.Figures[harness.IsoRequest][c], f.Figures[harness.IsoWarm][c], f.Figures[harness.IsoForkExec][c]
			fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", f.Name, c[1:],
				rate(bare), rate(reqLoop), rate(double), rps(rq), rps(wm), rps(fe), lat(rq), lat(wm))
		}
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "Paced at %.0f requests/s on one connection:\n\n", iso.PacedRPS)
	fmt.Fprintln(w, "| function | request p50/p99 µs | warm p50/p99 µs |")
	fmt.Fprintln(w, "|---|---|---|")
	for _, f := range iso.Functions {
		fmt.Fprintf(w, "| %s | %s | %s |\n", f.Name, lat(f.Paced[harness.IsoRequest]), lat(f.Paced[harness.IsoWarm]))
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| target | this run | goal | met |")
	fmt.Fprintln(w, "|---|---|---|---|")
	targetRows(w, iso.Targets)
	fmt.Fprintln(w)
}

// rate is a rate's median and range, or "—".
func rate(s harness.Spread) string {
	if s.N == 0 {
		return "—"
	}
	return fmt.Sprintf("%.0f (%.0f–%.0f)", s.Median, s.Min, s.Max)
}
