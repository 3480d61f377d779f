package report

import (
	"fmt"
	"io"
	"strings"

	"github.com/afterburn-dev/afterburn/bench/internal/harness"
)

// front reports the front scenario (harness/front.go): the watchdog + C child and every
// language's AfterBurn function, each with the watchdog's front and with -front off, side by
// side; then, per language, its rise at c=8 against the watchdog's saving and issue 29's
// language goal.
func front(w io.Writer, f *harness.Front) {
	if f == nil {
		return
	}
	fmt.Fprintln(w, "## The front: every language with the watchdog's front and with `-front off` (issue 29)")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Each language's AfterBurn function at the library's defaults behind the watchdog twice: with its own front "+
		"(PROTOCOL.md §10.6, the default) and with `-front off` (every request through net/http), the same command line but "+
		"for that flag; beside them the hop's watchdog + C child both ways (`watchdog-c`, `watchdog-c-net-http`), whose "+
		"difference is the watchdog's own saving, and the same with a slower C child (`C_CHILD_BUSY_NS`: its CPU kept busy "+
		"that long before each answer), reported, not judged: how the watchdog's saving moves at a lower request rate. "+
		"All in the same repetitions; within a pair the front runs first in odd "+
		"repetitions and `-front off` first in even ones. Front ÷ net/http is requests/s with the front over requests/s with "+
		"`-front off`, per repetition, then the median [min, max]. Time saved is 1e6/req/s with `-front off` less with the "+
		"front, per repetition: what the front takes off the figure's time per request (with everything under test on one "+
		"CPU, saturated at c=8, that CPU's time per request). CPU µs per request are from /proc (user + system): the tree is "+
		"the watchdog and its workers, the watchdog its process alone; saved is `-front off` less front, per repetition. "+
		"wrk wake-ups avoided are the interrupts wrk's CPU received to wake it (/proc/interrupts RES + CAL), per request, "+
		"with `-front off` less with the front: a response written while wrk sleeps wakes it from the CPU under test, "+
		"which pays for the interrupt, and a faster configuration finds wrk awake more often.")
	if f.WakeCostUs > 0 {
		fmt.Fprintln(w)
		fmt.Fprintf(w, "One such wake-up costs the CPU under test %s µs here (a one-byte pipe write that wakes a thread asleep on wrk's CPU, "+
			"less one that wakes nobody; median of 2000, measured before the repetitions): part of any configuration's time "+
			"saved is wrk's sleep, not the server's work.\n", num(f.WakeCostUs))
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| configuration | workload | c | front req/s | net/http req/s | front ÷ net/http | time saved µs/req | "+
		"tree CPU µs/req front / net/http | tree CPU saved µs/req | watchdog CPU µs/req front / net/http | watchdog CPU saved µs/req | "+
		"wrk wake-ups avoided /req |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|---|---|---|")
	frontRows(w, "watchdog + C child", f.CChild)
	frontRows(w, "watchdog + slower C child", f.CChildBusy)
	for _, name := range f.Order {
		if l := f.Languages[name]; l != nil {
			frontRows(w, name, &l.FrontPair)
		}
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Issue 29: \"every language's AfterBurn figure at c=8 rises by at least the watchdog's saving (reported per "+
		"language, none lower)\". Judged per language and workload at c=8, two ways: the figure rises (front ÷ net/http ≥ 1, "+
		"the median of the per-repetition ratios: \"none lower\"), and it rises by at least the watchdog's saving (the time "+
		"per request saved in the language's figure less the time saved in the watchdog + C child's, in the same repetition, "+
		"wrk's wake-ups aside: median ≥ 0 µs). Of that difference, wrk's wake-ups are the language's wrk wake-ups avoided less "+
		"the C child's, per repetition, times one wake-up's cost: time the CPU under test no longer spends waking the client, "+
		"which depends on how often wrk sleeps, so on the rate, not on the watchdog's work; beside them is the rest, which is "+
		"judged (the plain difference where a run did not count wake-ups). The watchdog does the same work in front of any "+
		"worker, so the second is met in expectation when the saving passes whole to the language; a small shortfall within "+
		"the repetitions' spread is noise, a large one is the language losing the saving elsewhere. The slower C child's row "+
		"shows how far the saving itself moves at a lower rate. Share is the language's time saved over the C child's.")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| language | workload | time saved µs/req, language / watchdog + C child | less the C child's, µs | share | "+
		"of it, wrk's wake-ups, µs | beside them, µs |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|")
	for _, name := range f.Order {
		l := f.Languages[name]
		if l == nil {
			continue
		}
		for _, r := range l.RiseOverSaving {
			lang, _ := l.FindCompare(r.Workload, r.Concurrency)
			var cc harness.FrontCompare
			if f.CChild != nil {
				cc, _ = f.CChild.FindCompare(r.Workload, r.Concurrency)
			}
			fmt.Fprintf(w, "| %s | %s | %s / %s | %s | %s | %s | %s |\n", name, r.Workload, num(lang.TimeSavedUs.Median), num(cc.TimeSavedUs.Median),
				bracketed(r.ExcessUs, true, ""), bracketed(r.Share, r.Share.N > 0, "×"),
				bracketed(r.WakesUs, r.WakesUs.N > 0, ""), bracketed(r.BesideWakesUs, r.BesideWakesUs.N > 0, ""))
		}
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| language | target | this run | goal | met |")
	fmt.Fprintln(w, "|---|---|---|---|---|")
	for _, name := range f.Order {
		l := f.Languages[name]
		if l == nil {
			fmt.Fprintf(w, "| %s | not measured | – | – | **no** |\n", name)
			continue
		}
		for _, t := range l.Targets {
			fmt.Fprintf(w, "| %s ", name)
			targetRows(w, []harness.Target{t})
		}
	}
	fmt.Fprintln(w)
	if ok, missed := f.GoalMet(); ok {
		fmt.Fprintln(w, "Issue 29's language goal: **met** in every language measured.")
	} else {
		fmt.Fprintf(w, "Issue 29's language goal: **not met** in %s.\n", strings.Join(missed, ", "))
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "The `-front off` command lines:")
	fmt.Fprintln(w)
	if f.CChild != nil {
		fmt.Fprintf(w, "- watchdog + C child: `%s`\n", strings.Join(f.CChild.NetHTTPCommand, " "))
	}
	if f.CChildBusy != nil {
		fmt.Fprintf(w, "- watchdog + slower C child: `%s` (in its environment, `%s`)\n", strings.Join(f.CChildBusy.NetHTTPCommand, " "),
			strings.Join(f.CChildBusy.Env, " "))
	}
	for _, name := range f.Order {
		if l := f.Languages[name]; l != nil {
			fmt.Fprintf(w, "- %s: `%s`\n", name, strings.Join(l.NetHTTPCommand, " "))
		}
	}
	fmt.Fprintln(w)
}

// frontRows writes a pair's rows, by workload and concurrency.
func frontRows(w io.Writer, name string, p *harness.FrontPair) {
	if p == nil {
		return
	}
	for _, wl := range []harness.Workload{harness.Hello, harness.Echo1K} {
		for _, c := range []string{"c1", "c8"} {
			on, off := p.Front[wl][c], p.NetHTTP[wl][c]
			if on == nil && off == nil {
				continue
			}
			cmp, ok := p.FindCompare(wl, c)
			fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %s | %s / %s | %s | %s / %s | %s | %s |\n", name, wl, strings.TrimPrefix(c, "c"),
				rps(on), rps(off), bracketed(cmp.RPSRatio, ok, "×"), bracketed(cmp.TimeSavedUs, ok, ""),
				hostCPU(on, false), hostCPU(off, false), bracketed(cmp.TreeCPUSavedUs, ok && cmp.TreeCPUSavedUs.N > 0, ""),
				hostCPU(on, true), hostCPU(off, true), bracketed(cmp.WatchdogCPUSavedUs, ok && cmp.WatchdogCPUSavedUs.N > 0, ""),
				bracketed3(cmp.LoadWakesAvoided, ok && cmp.LoadWakesAvoided.N > 0))
		}
	}
}

// bracketed prints a median [min, max] (the median alone for one repetition), with a unit
// after the median.
func bracketed(s harness.Spread, ok bool, unit string) string {
	if !ok {
		return "–"
	}
	if s.N > 1 {
		return fmt.Sprintf("%s%s [%s, %s]", num(s.Median), unit, num(s.Min), num(s.Max))
	}
	return num(s.Median) + unit
}

// bracketed3 is bracketed for a count per request, to three decimals.
func bracketed3(s harness.Spread, ok bool) string {
	if !ok {
		return "–"
	}
	if s.N > 1 {
		return fmt.Sprintf("%.3f [%.3f, %.3f]", s.Median, s.Min, s.Max)
	}
	return fmt.Sprintf("%.3f", s.Median)
}

// hostCPU is a configuration's median CPU µs per request: its whole tree's, or with watchdog
// the front process's (the watchdog) alone.
func hostCPU(f *harness.Figures, watchdog bool) string {
	if f == nil || f.Host == nil {
		return "–"
	}
	if watchdog {
		return num(f.Host.FrontCPUus.Median)
	}
	return num(f.Host.TreeCPUus.Median)
}
