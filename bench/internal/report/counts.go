package report

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/afterburn-dev/afterburn/bench/internal/harness"
)

// CountsMarkdown writes a counts run (make bench-counts): per configuration, workload and
// concurrency, the front process's user-space instructions, system calls and context switches
// per request, then the watchdog's goals (issue 29's for its front, issue 18's for net/http
// only), then where the system calls went.
func CountsMarkdown(w io.Writer, c *harness.Counts) {
	fmt.Fprintf(w, "# AfterBurn counts per request, %s\n\n", c.Date)
	fmt.Fprintf(w, "- machine: %s\n- placement: %s; watchdog workers: %d\n", c.Machine, c.Placement, c.Workers)
	fmt.Fprintf(w, "- user-space instructions: valgrind's callgrind on the front process (all its threads; children run natively), "+
		"counters zeroed before and dumped after %d requests on connections opened beforehand; Go under valgrind runs with "+
		"GODEBUG=asyncpreemptoff=1\n", c.Requests)
	fmt.Fprintf(w, "- system calls: %s, over %d requests\n", c.SyscallMethod, c.NativeRequests)
	fmt.Fprintln(w, "- context switches (voluntary + involuntary) and read+write calls (syscr + syscw): /proc over the same native requests; "+
		"CPU µs is time, so noise moves it: rough")
	fmt.Fprintln(w)
	bare := c.Config(harness.Ceiling)
	fmt.Fprintln(w, "| configuration | workload | c | user instructions | × bare server | syscalls | read+write calls | context switches (front) | context switches (tree) | CPU µs (front, rough) |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|---|")
	for _, cf := range c.Configs {
		for _, r := range cf.Runs {
			x := "–"
			if bare != nil {
				if b := bare.Run(r.Workload, r.Concurrency); b != nil && b.Instructions > 0 {
					x = num(r.Instructions/b.Instructions) + "×"
				}
			}
			front, tree, cpu, rw := "–", "–", "–", "–"
			if h := r.Native; h != nil {
				front = fmt.Sprintf("%s (%s + %s)", num(h.Front.CtxSwitches()), num(h.Front.Voluntary), num(h.Front.Involuntary))
				tree, cpu, rw = num(h.Tree.CtxSwitches()), num(h.Front.CPUus), num(h.Front.RWCalls)
			}
			fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", hopNames[cf.Key], r.Workload,
				strings.TrimPrefix(r.Concurrency, "c"), instructions(r.Instructions), x, num(r.Syscalls), rw, front, tree, cpu)
		}
	}
	fmt.Fprintln(w)
	if len(c.Targets) > 0 {
		fmt.Fprintln(w, "Goals: the watchdog with its front (§10.6) at most 20k user instructions per request for hello "+
			"(echo1k's are in the table above, not judged) and at most the relay's system calls per request + 2 (issue 29); "+
			"the watchdog with net/http only at most 1.5 × bare net/http's instructions (issue 18).")
		fmt.Fprintln(w)
		fmt.Fprintln(w, "| goal of the watchdog | this run | goal | met |")
		fmt.Fprintln(w, "|---|---|---|---|")
		targetRows(w, c.Targets)
		fmt.Fprintln(w)
	}
	syscallsByName(w, c)
}

// syscallsByName lists where the system calls went, when the method gives names (strace).
func syscallsByName(w io.Writer, c *harness.Counts) {
	var rows []string
	for _, cf := range c.Configs {
		for _, r := range cf.Runs {
			if len(r.SyscallsByName) == 0 {
				continue
			}
			names := make([]string, 0, len(r.SyscallsByName))
			for n := range r.SyscallsByName {
				names = append(names, n)
			}
			sort.Slice(names, func(i, j int) bool {
				a, b := r.SyscallsByName[names[i]], r.SyscallsByName[names[j]]
				return a > b || a == b && names[i] < names[j]
			})
			var parts []string
			for _, n := range names {
				if v := r.SyscallsByName[n]; v >= 0.01 {
					parts = append(parts, fmt.Sprintf("%s %s", n, num(v)))
				}
			}
			rows = append(rows, fmt.Sprintf("| %s | %s | %s | %s |", hopNames[cf.Key], r.Workload,
				strings.TrimPrefix(r.Concurrency, "c"), strings.Join(parts, ", ")))
		}
	}
	if len(rows) == 0 {
		return
	}
	fmt.Fprintln(w, "System calls per request by name (under the tracer: see the method above):")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| configuration | workload | c | calls per request |")
	fmt.Fprintln(w, "|---|---|---|---|")
	for _, r := range rows {
		fmt.Fprintln(w, r)
	}
	fmt.Fprintln(w)
}

// instructions prints an instruction count in thousands: 63.6k.
func instructions(v float64) string {
	if v == 0 {
		return "–"
	}
	return fmt.Sprintf("%.1fk", v/1000)
}
