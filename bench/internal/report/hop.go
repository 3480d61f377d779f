package report

import (
	"fmt"
	"io"
	"strings"

	"github.com/afterburn-dev/afterburn/bench/internal/harness"
)

// hopNames name the hop's configurations (harness.Hop) in the report.
var hopNames = map[harness.Mode]string{
	harness.Relay:            "relay (C relay + C child)",
	harness.WatchdogC:        "watchdog + C child",
	harness.WatchdogCNetHTTP: "watchdog (net/http only) + C child",
	harness.Limit:            "watchdog + Go limit child",
	harness.Ceiling:          "bare Go server",
}

// hop reports the watchdog's own cost against the relay: requests/s and the ratio to the
// relay, the front's watchdog over the net/http-only one, then what each configuration spent
// per request, then the watchdog's goals (issue 29).
func hop(w io.Writer, h *harness.Hop, workers int) {
	if h == nil {
		return
	}
	fmt.Fprintln(w, "## The hop: the watchdog against the relay")
	fmt.Fprintln(w)
	fmt.Fprintf(w, "The relay is a minimal C relay (one epoll loop, non-blocking, framing only) in front of one minimal C child "+
		"over two pipes: the physical limit of client → pipe → child → pipe → client on this machine. The watchdog (%d workers) "+
		"runs in front of the same C child with its own front (PROTOCOL.md §10.6, the default), the same with `-front off` "+
		"(every request through net/http), and in front of the Go limit child (a child reading blocking pipes); the bare Go "+
		"server has no child at all. × relay is requests/s over the relay's, per repetition; front ÷ net/http is the "+
		"watchdog's requests/s with its front over its requests/s with net/http only, per repetition.\n\n", workers)
	fmt.Fprint(w, "| workload | c | relay req/s |")
	for _, m := range harness.HopModes[1:] {
		fmt.Fprintf(w, " %s req/s | × relay |", hopNames[m])
	}
	fmt.Fprintln(w, " front ÷ net/http |")
	fmt.Fprintln(w, "|---|---|---|"+strings.Repeat("---|---|", len(harness.HopModes)-1)+"---|")
	for _, wl := range []harness.Workload{harness.Hello, harness.Echo1K} {
		for _, c := range []string{"c1", "c8"} {
			rl := h.Relay[wl][c]
			if rl == nil {
				continue
			}
			fmt.Fprintf(w, "| %s | %s | %s |", wl, strings.TrimPrefix(c, "c"), rps(rl))
			for _, m := range harness.HopModes[1:] {
				s, ok := h.FindRatio(m, wl, c)
				fmt.Fprintf(w, " %s | %s |", rps(h.Mode(m)[wl][c]), times(s, ok))
			}
			s, ok := h.FrontRatio(wl, c)
			fmt.Fprintf(w, " %s |\n", times(s, ok))
		}
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Per request, medians of the repetitions. CPU µs is user + system time from /proc/PID/stat; context "+
		"switches are voluntary + involuntary from /proc/PID/task/*/status; read+write calls are /proc/PID/io syscr + syscw, "+
		"the read-family and write-family system calls only (not epoll_wait, futex, accept, …; `make bench-counts` counts "+
		"every call). The front is the process the client talks to (the relay, the watchdog, the server); the tree adds "+
		"its children.")
	fmt.Fprintln(w)
	var configs []named
	for _, m := range harness.HopModes {
		configs = append(configs, named{hopNames[m], h.Mode(m)})
	}
	hostTable(w, configs)
	if len(h.Targets) > 0 {
		fmt.Fprintln(w, "| goal of the watchdog (issue 29; front on) | this run | goal | met |")
		fmt.Fprintln(w, "|---|---|---|---|")
		targetRows(w, h.Targets)
		fmt.Fprintln(w)
	}
}

// named is a configuration's figures under its name in the report.
type named struct {
	name string
	by   harness.ByWorkload
}

// hostTable writes the per-request host cost of configurations, by workload and concurrency.
func hostTable(w io.Writer, configs []named) {
	fmt.Fprintln(w, "| configuration | workload | c | CPU µs (tree) | CPU µs (front) | context switches (front) | read+write calls (front) | context switches (tree) | read+write calls (tree) |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|")
	for _, cf := range configs {
		for _, wl := range []harness.Workload{harness.Hello, harness.Echo1K} {
			for _, c := range []string{"c1", "c8"} {
				f := cf.by[wl][c]
				if f == nil || f.Host == nil {
					continue
				}
				h := f.Host
				fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", cf.name, wl, strings.TrimPrefix(c, "c"),
					num(h.TreeCPUus.Median), num(h.FrontCPUus.Median), num(h.FrontCtxSwitch.Median), num(h.FrontRWCalls.Median),
					num(h.TreeCtxSwitch.Median), num(h.TreeRWCalls.Median))
			}
		}
	}
	fmt.Fprintln(w)
}

// libraryCPU reports a language's CPU per request above the C child's.
func libraryCPU(w io.Writer, l *harness.LanguageResults) {
	if len(l.LibraryCPU) == 0 {
		return
	}
	fmt.Fprintln(w, "The library's own CPU per request: the watchdog and this function's whole process tree, less the watchdog "+
		"and the C child's, per repetition (the watchdog's cost cancels out; what remains is the library's and its runtime's).")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| AfterBurn | workload | c | AfterBurn CPU µs/req | watchdog + C child CPU µs/req | library above the C child, µs/req |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|")
	for _, x := range l.LibraryCPU {
		of := x.Of
		if of == "" { // a result written before every configuration had this row
			of = harness.OfAfterBurn
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s |\n", afterburnName(l, of), x.Workload, strings.TrimPrefix(x.Concurrency, "c"),
			spread(x.AfterBurnUs, true), spread(x.CChildUs, true), spread(x.AboveUs, true))
	}
	fmt.Fprintln(w)
}

// spread prints a median with its min–max when there was more than one repetition.
func spread(s harness.Spread, ok bool) string {
	if !ok {
		return "–"
	}
	if s.N > 1 {
		return fmt.Sprintf("%s (%s–%s)", num(s.Median), num(s.Min), num(s.Max))
	}
	return num(s.Median)
}
