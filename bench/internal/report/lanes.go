package report

import (
	"fmt"
	"io"

	"github.com/afterburn-dev/afterburn/bench/internal/harness"
)

// lanes reports the lanes scenario (harness/lanes.go): per language, the I/O-bound function in
// one worker of K lanes and in K workers of one lane side by side, with their trees' memory;
// hello with -lanes 1 beside the languages table of this run and the published one; and issue
// 20's goals.
func lanes(w io.Writer, r *harness.Results) {
	ln := r.Lanes
	if ln == nil {
		return
	}
	k := ln.K
	fmt.Fprintf(w, "## Lanes: 1 worker × %d lanes against %d workers × 1 lane\n\n", k, k)
	fmt.Fprintf(w, "`functions/<lang>/io*`: GET /io waits %.0f ms without holding its lane's runtime (Go: `time.Sleep` in the "+
		"handler's goroutine; Node: an awaited timer; Java: `Thread.sleep` on the lane's thread; Python: an `async def` handler "+
		"awaiting `asyncio.sleep`), then answers 1 KiB; wrk with %d connections. **1×%d** is the watchdog with `-workers 1 -lanes %d`, "+
		"**%d×1** with `-workers %d -lanes 1`. Memory: each pool alone under the same load, RSS and PSS (smaps_rollup) of the "+
		"watchdog and every worker added up: the sample with the most RSS of three taken during the load, and in brackets one "+
		"right after it. RSS counts a page shared by several workers once per worker; PSS shares it out. Tree CPU per request "+
		"(the watchdog and its workers, /proc) shows a pool that ran out of CPU rather than of lanes: everything under test shares one CPU.\n\n",
		ln.WaitMs, k, k, k, k, k)
	if ln.IOWarmup != "" {
		fmt.Fprintf(w, "The io pools were warmed up for %s each (`-lanes_warmup`).\n\n", ln.IOWarmup)
	}
	if k != harness.IssueLanes {
		fmt.Fprintf(w, "Issue 20's goals are stated for %d lanes; at %d they are for orientation only.\n\n", harness.IssueLanes, k)
	}
	var measured []string
	for _, name := range ln.Order {
		if s := ln.Languages[name].Skipped; s != "" {
			fmt.Fprintf(w, "**%s not measured**: %s.\n\n", name, s)
			continue
		}
		measured = append(measured, name)
	}
	c := fmt.Sprintf("c%d", k)
	fmt.Fprintf(w, "| language | 1×%d req/s | %d×1 req/s | 1×%d ÷ %d×1 | 1×%d p50/p99 µs | %d×1 p50/p99 µs | tree CPU µs/request 1×%d / %d×1 | 1×%d RSS MiB | %d×1 RSS MiB | RSS ratio | 1×%d PSS MiB | %d×1 PSS MiB | PSS ratio |\n",
		k, k, k, k, k, k, k, k, k, k, k, k)
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|---|---|---|---|")
	for _, name := range measured {
		l := ln.Languages[name]
		a, b := l.Lanes.Figures[harness.IO][c], l.Workers.Figures[harness.IO][c]
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %s / %s | %s | %s | %s | %s | %s | %s |\n", name, rps(a), rps(b),
			times(l.RPSRatio, l.RPSRatio.N > 0), lat(a), lat(b), treeCPU(a), treeCPU(b),
			mem(l.Lanes.Memory, false), mem(l.Workers.Memory, false), memRatio(l.RSSRatio),
			mem(l.Lanes.Memory, true), mem(l.Workers.Memory, true), memRatio(l.PSSRatio))
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Hello at c=8 with `-lanes 1` (the languages table's function and workers), beside AfterBurn's hello c=8 "+
		"without `-lanes` in this run's languages table and in the published `latest.json`: the default, lanes=auto, is one "+
		"lane for a library that prefers one (Python, Java, Go), so nothing should have got slower there; the Node library "+
		"prefers 8 (PROTOCOL.md §2.5). Information, not a goal: the published figure comes from another run.")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| language | `-lanes 1` req/s | p50/p99 µs | this run, no `-lanes` | published req/s | published run | ÷ published |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|")
	for _, name := range measured {
		l := ln.Languages[name]
		h := l.Hello.Figures[harness.Hello]["c8"]
		same := "–"
		if lr := r.Languages[name]; lr != nil {
			same = rps(lr.AfterBurn[harness.Hello]["c8"])
		}
		pub, when, over := "–", "–", "–"
		if p := l.Published; p != nil && h != nil {
			pub, when = fmt.Sprintf("%.0f", p.RPS.Median), p.Date
			over = num(h.RPS.Median/p.RPS.Median) + "×"
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %s |\n", name, rps(h), lat(h), same, pub, when, over)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| language | target | this run | goal | met |")
	fmt.Fprintln(w, "|---|---|---|---|---|")
	for _, name := range measured {
		for _, t := range ln.Languages[name].Targets {
			fmt.Fprintf(w, "| %s ", name)
			targetRows(w, []harness.Target{t})
		}
	}
	fmt.Fprintln(w)
}

// treeCPU is the CPU time of a configuration's whole tree per request (harness/hostcost.go):
// a pool near a whole CPU's worth per request of its rate ran out of CPU, not of lanes.
func treeCPU(f *harness.Figures) string {
	if f == nil || f.Host == nil {
		return "–"
	}
	return num(f.Host.TreeCPUus.Median)
}

// mem prints a pool's tree memory during the load, with the figure after it in brackets.
func mem(m *harness.PoolMemory, pss bool) string {
	if m == nil || m.During == nil || m.After == nil {
		return "–"
	}
	if pss {
		return fmt.Sprintf("%.0f (%.0f)", m.During.PSSMiB, m.After.PSSMiB)
	}
	return fmt.Sprintf("%.0f (%.0f)", m.During.RSSMiB, m.After.RSSMiB)
}

func memRatio(v float64) string {
	if v == 0 {
		return "–"
	}
	return num(v)
}
