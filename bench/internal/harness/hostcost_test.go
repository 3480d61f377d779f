package harness

import (
	"math"
	"os"
	"testing"
)

// TestParseProcTexts: the three /proc texts the host cost is read from, as Linux writes them.
func TestParseProcTexts(t *testing.T) {
	// The command name may hold spaces and parentheses; fields are counted after the last ')'.
	stat := "4242 (afterburn (x) y) S 1 4242 4242 0 -1 4194560 1234 0 0 0 150 25 7 3 20 0 9 0 3300 1000 200 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n"
	if got, err := parseStatCPU(stat); err != nil || got != 150+25+7+3 {
		t.Errorf("parseStatCPU = %d, %v; want utime+stime+cutime+cstime = 185", got, err)
	}
	if _, err := parseStatCPU("4242 (short) S 1 2\n"); err == nil {
		t.Error("parseStatCPU of a truncated line: no error; want one")
	}
	io := "rchar: 6976\nwchar: 120\nsyscr: 10\nsyscw: 32\nread_bytes: 0\nwrite_bytes: 0\ncancelled_write_bytes: 0\n"
	if got, err := parseIOCalls(io); err != nil || got != 42 {
		t.Errorf("parseIOCalls = %d, %v; want syscr+syscw = 42", got, err)
	}
	if _, err := parseIOCalls("rchar: 1\n"); err == nil {
		t.Error("parseIOCalls without syscr: no error; want one")
	}
	status := "Name:\tafterburn-watch\nState:\tS (sleeping)\nThreads:\t5\nvoluntary_ctxt_switches:\t1500\nnonvoluntary_ctxt_switches:\t20\n"
	if v, n, err := parseCtxSwitches(status); err != nil || v != 1500 || n != 20 {
		t.Errorf("parseCtxSwitches = %d, %d, %v; want 1500, 20", v, n, err)
	}
}

// TestHostCostDividesTheTreesDifference: a process in both samples counts its difference, one
// that started during the run all it has, one that ended nothing; the root is the front.
func TestHostCostDividesTheTreesDifference(t *testing.T) {
	before := treeSample{root: 10, procs: map[int]procCounters{
		10: {cpuTicks: 100, voluntary: 1000, involuntary: 10, rwCalls: 5000},
		11: {cpuTicks: 50, voluntary: 500, involuntary: 0, rwCalls: 2000},
		12: {cpuTicks: 99, voluntary: 99, involuntary: 99, rwCalls: 99}, // ends during the run
	}}
	after := treeSample{root: 10, procs: map[int]procCounters{
		10: {cpuTicks: 300, voluntary: 5000, involuntary: 30, rwCalls: 17000}, // +2 s, +4000, +20, +12000
		11: {cpuTicks: 150, voluntary: 2500, involuntary: 10, rwCalls: 6000},  // +1 s, +2000, +10, +4000
		13: {cpuTicks: 10, voluntary: 0, involuntary: 0, rwCalls: 0},          // started: 0.1 s
	}}
	h := hostCost(before, after, 2000)
	want := HostCost{Requests: 2000,
		Front: PerRequest{CPUus: 1000, Voluntary: 2, Involuntary: 0.01, RWCalls: 6},
		Tree:  PerRequest{CPUus: 1550, Voluntary: 3, Involuntary: 0.015, RWCalls: 8},
	}
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-9 }
	for _, c := range []struct {
		name      string
		got, want PerRequest
	}{{"front", h.Front, want.Front}, {"tree", h.Tree, want.Tree}} {
		if !near(c.got.CPUus, c.want.CPUus) || !near(c.got.Voluntary, c.want.Voluntary) ||
			!near(c.got.Involuntary, c.want.Involuntary) || !near(c.got.RWCalls, c.want.RWCalls) {
			t.Errorf("%s = %+v; want %+v", c.name, c.got, c.want)
		}
	}
	if hostCost(before, after, 0) != nil {
		t.Error("hostCost of no requests; want nil")
	}
}

// TestReadProcCountersOfThisProcess: the counters can be read from a live process.
func TestReadProcCountersOfThisProcess(t *testing.T) {
	if _, err := os.Stat("/proc/self/io"); err != nil {
		t.Skip("no /proc/PID/io here")
	}
	c, err := readProcCounters(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if c.rwCalls <= 0 || c.voluntary+c.involuntary <= 0 {
		t.Errorf("counters of this test process %+v; want some calls and switches", c)
	}
}

// TestHostSpreadIsOverTheRuns: Figures summarise the host cost of their runs.
func TestHostSpreadIsOverTheRuns(t *testing.T) {
	f := withCPU(30, 10, 20)
	if f.Host == nil || f.Host.TreeCPUus != (Spread{Median: 20, Min: 10, Max: 30, N: 3}) {
		t.Errorf("Figures.Host = %+v; want tree CPU 20 (10–30)", f.Host)
	}
	if g := figs(1, 2, 100); g.Host != nil {
		t.Errorf("Figures.Host without host costs = %+v; want nil", g.Host)
	}
}
