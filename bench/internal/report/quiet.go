package report

import (
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/afterburn-dev/afterburn/bench/internal/harness"
)

// The quiet-run guard's part of the report (harness/quiet.go): its verdict at the top, its
// figures per configuration at the end.

// maxNoisyListed is how many noisy runs the top of the report names; the JSON has them all.
const maxNoisyListed = 10

// quietHeader says, before any figure, whether the session was quiet.
func quietHeader(w io.Writer, r *harness.Results) {
	q := r.Quiet
	if q == nil {
		return // a run from before the guard
	}
	if !q.IsNoisy() {
		fmt.Fprintf(w, "Quiet run: each of the %d measured runs stayed within the quiet-run guard's thresholds (%s); %d attempts over them were repeated.\n\n",
			q.Runs, thresholds(q), len(q.Repeated))
		return
	}
	fmt.Fprintf(w, "**NOISY RUN, NOT PUBLISHED.** %d of the %d measured runs stayed over the quiet-run guard's thresholds (%s) "+
		"after up to %d retries each: the machine was not quiet, these figures are not comparable with a quiet run's, "+
		"and `latest.*` were left as they were.\n\n", len(q.Noisy), q.Runs, thresholds(q), q.Thresholds.Retries)
	for i, n := range q.Noisy {
		if i == maxNoisyListed {
			fmt.Fprintf(w, "- and %d more (the JSON's `quiet_guard.noisy_runs`)\n", len(q.Noisy)-i)
			break
		}
		g := n.Result.Guard
		fmt.Fprintf(w, "- %s %s c=%s rep %d, attempt %d: %s", n.Config, n.Workload, strings.TrimPrefix(n.Concurrency, "c"),
			n.Rep, g.Attempt, strings.Join(g.Noisy, "; "))
		if len(g.Busiest) > 0 {
			fmt.Fprintf(w, " (busiest outside the tree, any CPU: %s)", strings.Join(g.Busiest, ", "))
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintln(w)
}

func thresholds(q *harness.QuietSummary) string {
	t := q.Thresholds
	return fmt.Sprintf("others' CPU on CPU %s under %g %% of the run, steal under %g %%, calibration (%s) at most %g %% over the session's reference, "+
		"the median of its %d calibrations, %.2f ms (fastest %.2f ms)",
		q.CPUs, t.OthersPct, t.StealPct, q.CalibrationWork, t.CalibrationPct, q.Calibrations, referenceMs(q), q.BestCalibrationMs)
}

// referenceMs is the calibration the session's runs were judged against; results written
// before the reference existed were judged against the fastest.
func referenceMs(q *harness.QuietSummary) float64 {
	if q.ReferenceCalibrationMs > 0 {
		return q.ReferenceCalibrationMs
	}
	return q.BestCalibrationMs
}

// quietSection gives the guard's figures per configuration, over its repetitions: the worst
// of others' CPU, steal and calibration, and wrk's CPU (the load generator's own cost: near
// 100 % of its CPU, it is wrk that limits).
func quietSection(w io.Writer, r *harness.Results) {
	q := r.Quiet
	if q == nil {
		return
	}
	fmt.Fprintln(w, "## Quiet-run guard")
	fmt.Fprintln(w)
	fmt.Fprintf(w, "Per configuration, over its repetitions: the worst others' CPU, kernel threads' CPU (not judged) and steal (share of the run's wall time on CPU %s), "+
		"the worst calibration over the session's reference (%.2f ms), and wrk's own CPU (share of its one CPU, and per request; medians). "+
		"Attempts counts the runs repeated for noise.\n\n", q.CPUs, referenceMs(q))
	fmt.Fprintln(w, "| configuration | workload | c | attempts | others' CPU % | kernel threads % | steal % | calibration over reference % | wrk CPU % | wrk CPU µs/request |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|---|")
	for _, c := range configurations(r) {
		for _, wl := range []harness.Workload{harness.Hello, harness.Echo1K, harness.Model, harness.IO} {
			for _, conc := range concurrencies(c.figs[wl]) {
				f := c.figs[wl][conc]
				if f == nil {
					continue
				}
				var others, kernel, steal, cal, wrkPct, wrkUs []float64
				attempts := 0
				for _, run := range f.Runs {
					g := run.Guard
					if g == nil {
						continue
					}
					attempts += g.Attempt
					others, kernel, steal = append(others, g.OthersPct), append(kernel, g.KernelPct), append(steal, g.StealPct)
					cal = append(cal, 100*(math.Max(g.CalBeforeMs, g.CalAfterMs)/referenceMs(q)-1))
					wrkPct, wrkUs = append(wrkPct, g.WrkCPUPct), append(wrkUs, g.WrkUsPerReq)
				}
				if len(others) == 0 {
					continue
				}
				fmt.Fprintf(w, "| %s | %s | %s | %d | %.2f | %.2f | %.2f | %.1f | %.0f | %.1f |\n", c.key, wl, strings.TrimPrefix(conc, "c"),
					attempts, maxOf(others), maxOf(kernel), maxOf(steal), maxOf(cal), median(wrkPct), median(wrkUs))
			}
		}
	}
	fmt.Fprintln(w)
}

type configuration struct {
	key  string
	figs harness.ByWorkload
}

// configurations lists what was measured, once each: the shared limit and ceiling, then
// every language's own.
func configurations(r *harness.Results) []configuration {
	var out []configuration
	seen := map[string]bool{}
	add := func(key string, figs harness.ByWorkload) {
		if figs != nil && !seen[key] {
			seen[key] = true
			out = append(out, configuration{key, figs})
		}
	}
	for _, name := range r.Order {
		if l := r.Languages[name]; l != nil {
			add("limit", l.Limit)
			add("ceiling", l.Ceiling)
		}
	}
	for _, name := range r.Order {
		l := r.Languages[name]
		if l == nil {
			continue
		}
		for _, m := range []harness.Mode{harness.AfterBurn, harness.Fork, harness.Proxy, harness.Floor} {
			add(name+"/"+string(m), l.Mode(m))
		}
	}
	if ln := r.Lanes; ln != nil {
		for _, name := range ln.Order {
			l := ln.Languages[name]
			for _, p := range []*harness.LanePool{l.Lanes, l.Workers, l.Hello} {
				if p != nil { // nil for a language not measured
					add(p.Key, p.Figures)
				}
			}
		}
	}
	if f := r.ForkMode; f != nil {
		for _, p := range f.Pools {
			add(p.Key(), p.Figures)
		}
	}
	out = append(out, isolationConfigurations(r.Isolation)...)
	if f := r.Front; f != nil {
		pairs := []*harness.FrontPair{f.CChild, f.CChildBusy}
		for _, name := range f.Order {
			if l := f.Languages[name]; l != nil {
				pairs = append(pairs, &l.FrontPair)
			}
		}
		for _, p := range pairs {
			if p != nil {
				add(p.FrontKey, p.Front)
				add(p.NetHTTPKey, p.NetHTTP)
			}
		}
	}
	return out
}

// isolationConfigurations are the isolation scenario's pools (harness/isolation.go), each
// with its functions' figures: "python/iso-<mode>" under load at c=1 and c=8, and
// "python/iso-<mode>-paced" at the paced rate (its c column says paced). In a stable order.
func isolationConfigurations(iso *harness.Isolation) []configuration {
	if iso == nil {
		return nil
	}
	var out []configuration
	at := map[string]int{} // key → index in out
	put := func(key string, wl harness.Workload, figs harness.ByConcurrency) {
		i, ok := at[key]
		if !ok {
			i, at[key] = len(out), len(out)
			out = append(out, configuration{key, harness.ByWorkload{}})
		}
		out[i].figs[wl] = figs
	}
	for _, f := range iso.Functions {
		for _, mode := range slices.Sorted(maps.Keys(f.Figures)) {
			put("python/iso-"+mode, f.Workload, f.Figures[mode])
		}
		for _, mode := range slices.Sorted(maps.Keys(f.Paced)) {
			put("python/iso-"+mode+"-paced", f.Workload, harness.ByConcurrency{"paced": f.Paced[mode]})
		}
	}
	return out
}

func maxOf(xs []float64) float64 {
	m := math.Inf(-1)
	for _, x := range xs {
		m = math.Max(m, x)
	}
	return m
}

func median(xs []float64) float64 {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// concurrencies are the keys of b ("c1", "c8", "c32"), lowest first.
func concurrencies(b harness.ByConcurrency) []string {
	var out []string
	for c := range b {
		out = append(out, c)
	}
	slices.SortFunc(out, func(x, y string) int {
		a, _ := strconv.Atoi(strings.TrimPrefix(x, "c"))
		b, _ := strconv.Atoi(strings.TrimPrefix(y, "c"))
		return a - b
	})
	return out
}
