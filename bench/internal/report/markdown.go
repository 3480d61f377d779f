// Package report writes a benchmark run as JSON, a markdown table and a PNG chart.
package report

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"

	"github.com/afterburn-dev/afterburn/bench/internal/harness"
)

// WriteJSON writes results (a *harness.Results or a *harness.Counts), indented, to path.
func WriteJSON(path string, r any) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// Markdown writes the hop (the watchdog against the relay, hop.go), then per language the
// headline (AfterBurn over the strongest peer behind the proxy, peers.go), the seed's table
// (AfterBurn against the relay first, then the fork, proxy, pipe-limit and ceiling columns with
// AfterBurn's ratio to each), the peers behind the proxy and alone, the library's CPU above the
// C child's, the targets, and the floor where one was measured.
func Markdown(w io.Writer, r *harness.Results) {
	fmt.Fprintf(w, "# AfterBurn benchmarks, %s\n\n", r.Date)
	if r.Quick {
		fmt.Fprintln(w, "QUICK run: short, one repetition; for a sanity check, not for publishing.")
		fmt.Fprintln(w)
	}
	partialHeader(w, r.Failure) // a partial run says so, and why, before any figure
	quietHeader(w, r)           // quiet.go: a noisy run says so before any figure
	fmt.Fprintf(w, "- machine: %s\n- placement: %s\n- each figure: median of %d × %s wrk runs (min–max in brackets); "+
		"ratios are AfterBurn ÷ baseline per repetition, then the median\n\n", r.Machine, r.Placement, r.Reps, r.Duration)
	hop(w, r.Hop, r.Workers)
	for _, name := range r.Order {
		l := r.Languages[name]
		if l == nil {
			continue
		}
		fmt.Fprintf(w, "## %s\n\n", name)
		headline(w, l) // peers.go
		if len(l.Peers) > 0 {
			fmt.Fprintf(w, "The proxy column: %s behind `cmd/http-proxy`.\n\n", proxyServer(l))
		}
		fmt.Fprintln(w, "| workload | c | AfterBurn req/s | relay req/s | × relay | fork req/s | × fork | proxy req/s | × proxy | pipe limit req/s | × limit | ceiling req/s | × ceiling | fork p50/p99 µs | AfterBurn p50/p99 µs |")
		fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
		for _, wl := range []harness.Workload{harness.Hello, harness.Echo1K} {
			for _, c := range []string{"c1", "c8"} {
				ab := l.AfterBurn[wl][c]
				if ab == nil {
					continue
				}
				fk, px, lm, cl, rl := l.Fork[wl][c], l.Proxy[wl][c], l.Limit[wl][c], l.Ceiling[wl][c], l.Relay[wl][c]
				fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n",
					wl, strings.TrimPrefix(c, "c"), rps(ab), rps(rl), ratio(l, harness.Relay, wl, c), rps(fk), ratio(l, harness.Fork, wl, c),
					rps(px), ratio(l, harness.Proxy, wl, c), rps(lm), ratio(l, harness.Limit, wl, c),
					rps(cl), ratio(l, harness.Ceiling, wl, c), lat(fk), lat(ab))
			}
		}
		fmt.Fprintln(w)
		peers(w, l)
		libraryCPU(w, l)
		if cs := l.ColdStart; cs != nil {
			fmt.Fprintf(w, "Cold start (spawn to handshake passed): %.1f ms with the library (%.1f–%.1f), %.1f ms without (%.1f–%.1f): the library adds %.1f ms.\n\n",
				cs.WithLibraryMs.Median, cs.WithLibraryMs.Min, cs.WithLibraryMs.Max,
				cs.WithoutLibraryMs.Median, cs.WithoutLibraryMs.Min, cs.WithoutLibraryMs.Max, cs.LibraryCostMs)
		}
		if lb := l.LargeBody; lb != nil {
			fmt.Fprintf(w, "Large body: %d MiB echoed at %.0f MB/s (%.0f–%.0f, %d echoes); peak RSS: watchdog %.1f MiB, worker %.1f MiB.\n\n",
				lb.Bytes>>20, lb.MBPerSec, lb.MBPerSecSpread.Min, lb.MBPerSecSpread.Max, lb.MBPerSecSpread.N,
				lb.WatchdogPeakRSSMB, lb.WorkerPeakRSSMB)
		}
		fmt.Fprintln(w, "| target | this run | goal | met |")
		fmt.Fprintln(w, "|---|---|---|---|")
		targetRows(w, l.Targets)
		fmt.Fprintln(w)
		p99Baselines(w, l)
		floor(w, l)
	}
	lanes(w, r)             // lanes.go
	forkMode(w, r.ForkMode) // forkmode.go
	isolation(w, r.Isolation)
	front(w, r.Front) // front.go
	quietSection(w, r)
}

// partialHeader says that a run is partial: which scenario failed or was interrupted, its
// error, which scenarios' figures follow and which are missing. Nothing when f is nil.
func partialHeader(w io.Writer, f *harness.Failure) {
	if f == nil {
		return
	}
	what := "failed"
	if f.Interrupted {
		what = "was interrupted"
	}
	fmt.Fprintf(w, "**PARTIAL RUN, NOT PUBLISHED.** The %s scenario %s; `latest.*` were left as they were. "+
		"Below are the scenarios that completed before it: %s. The %s scenario's figures are dropped, not shown "+
		"(whatever it measured before it stopped is only some of its repetitions)", f.Scenario, what, orNothing(f.Completed), f.Scenario)
	if len(f.NotRun) > 0 {
		fmt.Fprintf(w, ", and %s did not run", strings.Join(f.NotRun, ", "))
	}
	fmt.Fprintf(w, ". The error:\n\n```\n%s\n```\n\n", strings.TrimRight(f.Error, "\n"))
}

func orNothing(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

// floor reports the floor (harness.Language.Floor), measured in the same repetitions: its
// figures, AfterBurn's ratio to it, and the goals applied to it in AfterBurn's place.
func floor(w io.Writer, l *harness.LanguageResults) {
	if l.Floor == nil {
		return
	}
	fmt.Fprintln(w, "The floor: the thinnest worker on the library's own dependencies, with none of the library's work "+
		"(`functions/<lang>/floor*`), measured in the same repetitions.")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| workload | c | floor req/s | AfterBurn ÷ floor | floor p50/p99 µs |")
	fmt.Fprintln(w, "|---|---|---|---|---|")
	for _, wl := range []harness.Workload{harness.Hello, harness.Echo1K} {
		for _, c := range []string{"c1", "c8"} {
			if f := l.Floor[wl][c]; f != nil {
				fmt.Fprintf(w, "| %s | %s | %s | %s | %s |\n", wl, strings.TrimPrefix(c, "c"), rps(f), ratio(l, harness.Floor, wl, c), lat(f))
			}
		}
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| goal applied to the floor | floor | goal | met |")
	fmt.Fprintln(w, "|---|---|---|---|")
	targetRows(w, l.FloorTargets)
	fmt.Fprintln(w)
}

// p99Baselines applies the p99 rule of the targets to the baselines that run no library (the
// bare server and the pipe limit) at c=1 in the same run: a shared machine's own stalls reach
// the tail of every configuration, so a p99 miss means little when these miss too.
func p99Baselines(w io.Writer, l *harness.LanguageResults) {
	var parts []string
	for _, b := range []struct {
		mode harness.Mode
		name string
	}{{harness.Ceiling, "bare server"}, {harness.Limit, "pipe limit"}} {
		for _, wl := range []harness.Workload{harness.Hello, harness.Echo1K} {
			f := l.Mode(b.mode)[wl]["c1"]
			if f == nil {
				continue
			}
			goal := harness.P99GoalMicroseconds(f.P50us.Median)
			verdict := "within"
			if f.P99us.Median > goal {
				verdict = "**over**"
			}
			parts = append(parts, fmt.Sprintf("%s %s %.0f / %.0f µs (rule %.0f): %s",
				b.name, wl, f.P50us.Median, f.P99us.Median, goal, verdict))
		}
	}
	if len(parts) > 0 {
		fmt.Fprintf(w, "The p99 rule applied to the baselines without a library, p50 / p99 at c=1: %s.\n\n",
			strings.Join(parts, "; "))
	}
}

func targetRows(w io.Writer, ts []harness.Target) {
	for _, t := range ts {
		met := "yes"
		if !t.Met {
			met = "**no**"
		}
		val := num(t.Value)
		if t.Min != t.Max {
			val += fmt.Sprintf(" (%s–%s)", num(t.Min), num(t.Max))
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s |\n", t.Name, val, t.Goal, met)
	}
}

func rps(f *harness.Figures) string {
	if f == nil {
		return "–"
	}
	if f.RPS.N > 1 {
		return fmt.Sprintf("%.0f (%.0f–%.0f)", f.RPS.Median, f.RPS.Min, f.RPS.Max)
	}
	return fmt.Sprintf("%.0f", f.RPS.Median)
}

func lat(f *harness.Figures) string {
	if f == nil {
		return "–"
	}
	return fmt.Sprintf("%.0f / %.0f", f.P50us.Median, f.P99us.Median)
}

func ratio(l *harness.LanguageResults, base harness.Mode, w harness.Workload, c string) string {
	for _, r := range l.Ratios {
		if r.Baseline == base && r.Workload == w && r.Concurrency == c {
			return times(r.Ratio, true)
		}
	}
	return "–"
}

// times prints a ratio: its median, with its min–max when there was more than one repetition.
func times(s harness.Spread, ok bool) string {
	if !ok {
		return "–"
	}
	if s.N > 1 {
		return fmt.Sprintf("%s× (%s–%s)", num(s.Median), num(s.Min), num(s.Max))
	}
	return num(s.Median) + "×"
}

// num prints 3 significant figures, enough for a ratio or a rate.
func num(v float64) string {
	switch a := math.Abs(v); {
	case a >= 100:
		return fmt.Sprintf("%.0f", v)
	case a >= 10:
		return fmt.Sprintf("%.1f", v)
	default:
		return fmt.Sprintf("%.2f", v)
	}
}
