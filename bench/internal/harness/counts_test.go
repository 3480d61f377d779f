package harness

import (
	"fmt"
	"math"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// A callgrind dump as callgrind_control -d writes it, cut short.
const callgrindDumpText = `# callgrind format
version: 1
creator: callgrind-3.19.0
pid: 18405
cmd:  go/bin/afterburn-watchdog -port 0 -- bench/bin/c-child
part: 1

desc: I1 cache: 
desc: D1 cache: 
desc: LL cache: 

desc: Timerange: Basic block 0 - 2592848
desc: Trigger: dump

positions: line
events: Ir
summary: 6758475


ob=(2) /work/go/bin/afterburn-watchdog
fl=(14) /usr/local/go/src/runtime/proc.go
fn=(120) runtime.schedule
4010 16
totals: 6758502
`

func TestParseCallgrindTotal(t *testing.T) {
	if got, err := parseCallgrindTotal(callgrindDumpText); err != nil || got != 6758502 {
		t.Errorf("parseCallgrindTotal = %d, %v; want the totals line's 6758502", got, err)
	}
	// Without a totals line, the summary; Ir found by its column among several events.
	text := "events: Dr Ir Dw\nsummary: 10 20 30\n"
	if got, err := parseCallgrindTotal(text); err != nil || got != 20 {
		t.Errorf("parseCallgrindTotal(%q) = %d, %v; want Ir's 20", text, got, err)
	}
	for _, bad := range []string{"", "events: Dr\ntotals: 5\n", "events: Ir\n"} {
		if _, err := parseCallgrindTotal(bad); err == nil {
			t.Errorf("parseCallgrindTotal(%q): no error; want one", bad)
		}
	}
}

func TestParsePerfCSV(t *testing.T) {
	text := "# started on Wed Nov 25 23:28:25 2026\n\n107912,,raw_syscalls:sys_enter,613497893,100.00,,\n"
	if n, ev, err := parsePerfCSV(text); err != nil || n != 107912 || ev != "raw_syscalls:sys_enter" {
		t.Errorf("parsePerfCSV = %d, %q, %v; want 107912 raw_syscalls:sys_enter", n, ev, err)
	}
	if _, _, err := parsePerfCSV("<not supported>,,raw_syscalls:sys_enter,0,100.00,,\n"); err == nil {
		t.Error("parsePerfCSV of <not supported>: no error; want one")
	}
}

func TestParseStraceSummary(t *testing.T) {
	text := `% time     seconds  usecs/call     calls    errors syscall
------ ----------- ----------- --------- --------- ------------------
 43.58    0.675438          84      7960           nanosleep
 29.24    0.453178         294      1540        78 futex
  4.40    0.068141           1     42206     11176 read
------ ----------- ----------- --------- --------- ------------------
100.00    1.549903          13     51706     11254 total
`
	total, by, err := parseStraceSummary(text)
	if err != nil || total != 51706 {
		t.Fatalf("parseStraceSummary total = %d, %v; want 51706", total, err)
	}
	if by["read"] != 42206 || by["nanosleep"] != 7960 || by["futex"] != 1540 || len(by) != 3 {
		t.Errorf("by name = %v; want read 42206, nanosleep 7960, futex 1540", by)
	}
	if _, _, err := parseStraceSummary("strace: attach: ptrace(PTRACE_SEIZE, 1): Operation not permitted\n"); err == nil {
		t.Error("parseStraceSummary without a table: no error; want one")
	}
}

func TestParseCPUList(t *testing.T) {
	for _, c := range []struct {
		in   string
		want cpuSet
	}{
		{"0", cpuSet{1}},
		{"1", cpuSet{2}},
		{"0-2,5", cpuSet{0b100111}},
		{"64", cpuSet{0, 1}},
	} {
		if got, err := parseCPUList(c.in); err != nil || got != c.want {
			t.Errorf("parseCPUList(%q) = %v, %v; want %v", c.in, got, err, c.want)
		}
	}
	for _, bad := range []string{"", "x", "2-1", "-1", "0,,1", "5000"} {
		if _, err := parseCPUList(bad); err == nil {
			t.Errorf("parseCPUList(%q): no error; want one", bad)
		}
	}
}

// TestCountsTargets: issue 29's goals for the watchdog with its front (at most 20k user
// instructions per request for hello, at most the relay's system calls + 2 for every workload
// and concurrency), issue 18's 1.5 × bare net/http's instructions for the net/http-only
// watchdog only.
func TestCountsTargets(t *testing.T) {
	run := func(w Workload, c string, ir, sc float64) *CountsRun {
		return &CountsRun{Workload: w, Concurrency: c, Instructions: ir, Syscalls: sc}
	}
	c := &Counts{Configs: []*CountsConfig{
		{Key: Relay, Runs: []*CountsRun{run(Hello, "c1", 2600, 6), run(Hello, "c8", 2700, 3), run(Echo1K, "c1", 3000, 6)}},
		{Key: WatchdogC, Runs: []*CountsRun{
			run(Hello, "c1", 20500, 8),   // instructions over 20k; system calls the relay's + 2 exactly
			run(Hello, "c8", 20000, 5.5), // instructions 20k exactly; system calls the relay's + 2.5
			run(Echo1K, "c1", 30000, 7),  // instructions not judged (the goal is hello's); system calls are
		}},
		{Key: WatchdogCNetHTTP, Runs: []*CountsRun{run(Hello, "c1", 52000, 11), run(Hello, "c8", 55000, 6.2)}},
		{Key: Ceiling, Runs: []*CountsRun{run(Hello, "c1", 35000, 6.5), run(Hello, "c8", 33000, 3.2)}},
	}}
	got := map[string]Target{}
	var names []string
	for _, tg := range countsTargets(c) {
		got[tg.Name] = tg
		names = append(names, tg.Name)
	}
	want := []struct {
		name  string
		value float64
		goal  string
		met   bool
	}{
		{"hello c1 watchdog user instructions per request", 20500, "<= 20000", false},
		{"hello c8 watchdog user instructions per request", 20000, "<= 20000", true},
		{"hello c1 watchdog system calls per request", 8, "<= 8.00 (relay's 6.00 + 2)", true},
		{"hello c8 watchdog system calls per request", 5.5, "<= 5.00 (relay's 3.00 + 2)", false},
		{"echo1k c1 watchdog system calls per request", 7, "<= 8.00 (relay's 6.00 + 2)", true},
		{"hello c1 watchdog (net/http only) instructions ÷ bare net/http's", 52000.0 / 35000, "<= 1.5", true},
		{"hello c8 watchdog (net/http only) instructions ÷ bare net/http's", 55000.0 / 33000, "<= 1.5", false},
	}
	if len(got) != len(want) {
		t.Errorf("countsTargets = %q; want %d goals (no echo1k instruction goal, none of the front against bare net/http)", names, len(want))
	}
	for _, w := range want {
		g, ok := got[w.name]
		if !ok {
			t.Errorf("no goal %q in %q", w.name, names)
			continue
		}
		if math.Abs(g.Value-w.value) > 1e-9 || g.Goal != w.goal || g.Met != w.met {
			t.Errorf("%s = %v, goal %q, met %v; want %v, %q, %v", w.name, g.Value, g.Goal, g.Met, w.value, w.goal, w.met)
		}
	}
	// Without the relay or the bare server, only what can be judged.
	c.Configs = []*CountsConfig{c.Configs[1]}
	if got := countsTargets(c); len(got) != 2 || got[0].Name != "hello c1 watchdog user instructions per request" {
		t.Errorf("countsTargets of the watchdog alone = %+v; want its two instruction goals", got)
	}
}

// TestCountsConfigs: make bench-counts counts the relay, the watchdog with its front, the same
// watchdog with -front off and the bare server, in that order.
func TestCountsConfigs(t *testing.T) {
	cs := countsConfigs(CountsOptions{Watchdog: "go/bin/afterburn-watchdog", Workers: 2})
	var keys []Mode
	for _, c := range cs {
		keys = append(keys, c.key)
	}
	if want := []Mode{Relay, WatchdogC, WatchdogCNetHTTP, Ceiling}; fmt.Sprint(keys) != fmt.Sprint(want) {
		t.Fatalf("counted configurations %v; want %v", keys, want)
	}
	on, off := strings.Join(cs[1].argv, " "), strings.Join(cs[2].argv, " ")
	if want := strings.Replace(on, " -- ", " -front off -- ", 1); off != want || strings.Contains(on, "-front") {
		t.Errorf("net/http-only watchdog = %q; want the front's %q with -front off: %q", off, on, want)
	}
	if !cs[1].pool || !cs[2].pool || cs[2].program != "afterburn-watchdog" {
		t.Errorf("the watchdogs: %+v, %+v; want both waited for as pools", cs[1], cs[2])
	}
}

// timeoutForTests bounds a test's requests under valgrind.
const timeoutForTests = time.Minute

// TestCallgrindCountsTheRelay: the relay under callgrind, zeroed and dumped around a few
// requests from the fixed client, counts a plausible number of instructions per request.
func TestCallgrindCountsTheRelay(t *testing.T) {
	if testing.Short() {
		t.Skip("runs valgrind")
	}
	for _, tool := range []string{"valgrind", "callgrind_control"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("no %s (make bench-counts installs valgrind)", tool)
		}
	}
	relay, child := buildC(t)
	dir := t.TempDir()
	s := start(t, "relay (callgrind)", "c-relay", valgrindCommand([]string{relay, "-addr", "127.0.0.1:0", "--", child}, dir), false)
	fc, err := dialFixed(s.addr, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer fc.close()
	if err := fc.run(Echo1K, 10, timeoutForTests); err != nil {
		t.Fatal(err)
	}
	pid := s.cmd.Process.Pid
	if err := callgrindZero(pid); err != nil {
		t.Fatal(err)
	}
	if err := fc.run(Hello, 50, timeoutForTests); err != nil {
		t.Fatal(err)
	}
	ir, err := callgrindDump(pid, dir)
	if err != nil {
		t.Fatalf("%v\n%s", err, s.log.String())
	}
	// Issue 18 measured 2–3k per request for such a relay.
	if per := float64(ir) / 50; per < 500 || per > 50000 {
		t.Errorf("relay: %.0f instructions per request; want a few thousand", per)
	}
	entries, _ := os.ReadDir(dir)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if !strings.Contains(strings.Join(names, " "), ".1") {
		t.Errorf("dumps in %s: %v; want callgrind.out.PID.1", dir, names)
	}
}
