package harness

import (
	"errors"
	"os/exec"
	"runtime"
	"testing"
	"time"
)

const interruptsSample = `            CPU0       CPU2       
   1:          9          0   IO-APIC   1-edge      i8042
 NMI:          0          0   Non-maskable interrupts
 LOC:    1039371     955131   Local timer interrupts
 RES:     151593      49149   Rescheduling interrupts
 CAL:   17255423    5035647   Function call interrupts
 TLB:       4104       3919   TLB shootdowns
`

// TestParseWakeIPIs: the rescheduling and function-call interrupts of the CPUs asked for,
// found by the header's CPU names (CPU 1 offline here), and nothing else (not the timer's,
// not TLB shootdowns).
func TestParseWakeIPIs(t *testing.T) {
	for _, tc := range []struct {
		cpus []int
		want int64
	}{
		{[]int{0}, 151593 + 17255423},
		{[]int{2}, 49149 + 5035647},
		{[]int{0, 2}, 151593 + 17255423 + 49149 + 5035647},
		{nil, 0},
	} {
		got, err := parseWakeIPIs(interruptsSample, tc.cpus)
		if err != nil || got != tc.want {
			t.Errorf("parseWakeIPIs(%v) = %d, %v; want %d", tc.cpus, got, err, tc.want)
		}
	}
	if _, err := parseWakeIPIs(interruptsSample, []int{1}); err == nil {
		t.Error("parseWakeIPIs of an offline CPU: no error")
	}
	arm := "           CPU0       CPU1\n IPI0:       100        200       Rescheduling interrupts\n"
	if _, err := parseWakeIPIs(arm, []int{0}); !errors.Is(err, errNoWakeIPIs) {
		t.Errorf("parseWakeIPIs without RES and CAL rows = %v; want errNoWakeIPIs", err)
	}
	bad := "           CPU0\n RES:        x1   Rescheduling interrupts\n CAL:         1   Function call interrupts\n"
	if _, err := parseWakeIPIs(bad, []int{0}); err == nil {
		t.Error("parseWakeIPIs of a count that is not a number: no error")
	}
	if _, err := parseWakeIPIs("  0:  1  2\n", []int{0}); err == nil {
		t.Error("parseWakeIPIs without a header of CPUs: no error")
	}
}

// TestReadWakeIPIsCountsAWakeUp: waking a thread asleep on another CPU adds to that CPU's
// count, where the machine's kernel counts them (x86).
func TestReadWakeIPIsCountsAWakeUp(t *testing.T) {
	if runtime.NumCPU() < 2 {
		t.Skip("one CPU: no other CPU to wake a thread on")
	}
	before, err := readWakeIPIs([]int{0})
	if errors.Is(err, errNoWakeIPIs) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	if _, err := wakeCost(1, 0); err != nil {
		t.Fatal(err)
	}
	after, err := readWakeIPIs([]int{0})
	if err != nil {
		t.Fatal(err)
	}
	// wakeCost woke the sleeper on CPU 0 wakeTrials times, after it had slept wakeIdle.
	if after-before < wakeTrials/2 {
		t.Errorf("CPU 0 received %d wake-up interrupts over %d wake-ups from CPU 1", after-before, wakeTrials)
	}
}

// TestWakeCost: a write that wakes a thread asleep on another CPU costs the writer more than
// one that wakes nobody, and less than a millisecond.
func TestWakeCost(t *testing.T) {
	if runtime.NumCPU() < 2 {
		t.Skip("one CPU: no other CPU to wake a thread on")
	}
	d, err := wakeCost(1, 0)
	if err != nil {
		t.Fatal(err)
	}
	if d <= 0 || d > time.Millisecond {
		t.Errorf("wakeCost = %v; want more than nothing, less than 1 ms", d)
	}
	t.Logf("a wake-up from CPU 1 of a thread asleep on CPU 0 costs CPU 1 %v", d)
	if _, err := wakeCost(1, 4096); err == nil {
		t.Error("wakeCost on a CPU out of range: no error")
	}
}

func TestCPUList(t *testing.T) {
	got, err := cpuList("0,2-3")
	if err != nil || len(got) != 3 || got[0] != 0 || got[1] != 2 || got[2] != 3 {
		t.Errorf(`cpuList("0,2-3") = %v, %v`, got, err)
	}
	if _, err := cpuList("x"); err == nil {
		t.Error(`cpuList("x"): no error`)
	}
}

// TestMeasureCountsWrkWakeUps: a measured run with wrk pinned carries wrk's wake-ups per
// request; one with wrk unpinned carries none.
func TestMeasureCountsWrkWakeUps(t *testing.T) {
	if _, err := exec.LookPath("wrk"); err != nil {
		t.Skip("no wrk on PATH (make bench-tools installs it)")
	}
	if runtime.NumCPU() < 2 {
		t.Skip("one CPU: wrk cannot have a CPU of its own")
	}
	if _, err := readWakeIPIs([]int{0}); err != nil {
		t.Skip(err)
	}
	relay, child := buildC(t)
	s := start(t, "relay", "c-relay", []string{relay, "-addr", "127.0.0.1:0", "--", child}, false)
	r, err := s.measure(Load{CPU: "0"}, Hello, 8, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if r.Host == nil || r.Host.LoadWakeIPIs == nil {
		t.Fatalf("run with wrk pinned: host cost %+v; want wrk's wake-ups", r.Host)
	}
	// At most a wake-up for each response, and some: wrk sleeps between them now and then.
	if w := *r.Host.LoadWakeIPIs; w <= 0 || w > 2 {
		t.Errorf("wrk's wake-ups per request = %.3f over %d requests; want some, at most about one a request", w, r.Requests)
	}
	r, err = s.measure(Load{}, Hello, 8, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if r.Host == nil || r.Host.LoadWakeIPIs != nil {
		t.Errorf("run with wrk unpinned: host cost %+v; want no wake-ups counted", r.Host)
	}
}

// TestReadWakeIPIsNeedsACPU: no CPU (wrk unpinned) is no count, not a sum of nothing.
func TestReadWakeIPIsNeedsACPU(t *testing.T) {
	if _, err := readWakeIPIs(nil); !errors.Is(err, errNoLoadCPU) {
		t.Errorf("readWakeIPIs(nil) = %v; want errNoLoadCPU", err)
	}
}
