package harness

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// statText is /proc/stat as Linux prints it, with the given per-CPU counters.
func statText(cpus ...cpuCounters) string {
	var total cpuCounters
	var lines []string
	for i, c := range cpus {
		lines = append(lines, fmt.Sprintf("cpu%d %d %d %d %d %d %d %d %d %d %d", i,
			c.User, c.Nice, c.System, c.Idle, c.IOWait, c.IRQ, c.SoftIRQ, c.Steal, c.Guest, c.GuestNice))
		total.User += c.User
		total.System += c.System
		total.Idle += c.Idle
	}
	return fmt.Sprintf("cpu  %d 0 %d %d 0 0 0 0 0 0\n", total.User, total.System, total.Idle) +
		strings.Join(lines, "\n") + "\n" +
		"intr 11829833 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 1 1 15 0 0 0 0 615 225\n" +
		"ctxt 27664783\nbtime 1764109400\nprocesses 20581\nprocs_running 2\nprocs_blocked 0\n" +
		"softirq 4523931 0 1244117 12 497417 0 0 1208 1398211 0 1382966\n"
}

func TestParseProcStat(t *testing.T) {
	// Two lines of a real /proc/stat (a 2-CPU Firecracker VM, Linux 6.18), with the rest.
	text := "cpu  247281 0 69781 288562 1060 0 2664 111 0 0\n" +
		"cpu0 122827 0 34886 145598 188 0 1251 44 0 0\n" +
		"cpu1 124454 3 34895 142963 872 7 1413 67 5 1\n" +
		"intr 11829833 0 0 0\nctxt 27664783\nbtime 1764109400\nprocesses 20581\nprocs_running 3\nprocs_blocked 0\n" +
		"softirq 4523931 0 1244117 12 497417 0 0 1208 1398211 0 1382966\n"
	got, err := parseProcStat(text)
	if err != nil {
		t.Fatal(err)
	}
	want := map[int]cpuCounters{
		0: {122827, 0, 34886, 145598, 188, 0, 1251, 44, 0, 0},
		1: {124454, 3, 34895, 142963, 872, 7, 1413, 67, 5, 1},
	}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("parseProcStat = %+v; want %+v", got, want)
	}
	// busy: user+nice+system+irq+softirq; not idle, iowait, steal, or guest (inside user).
	if b := got[1].busy(); b != 124454+3+34895+7+1413 {
		t.Errorf("busy = %d; want %d", b, 124454+3+34895+7+1413)
	}
	// Linux before 2.6.33 printed no guest_nice, before 2.6.24 no guest: still read.
	if got, err := parseProcStat("cpu0 1 2 3 4 5 6 7 8\n"); err != nil || got[0].Steal != 8 {
		t.Errorf("8 counters: %+v, %v; want steal 8", got, err)
	}
	for _, bad := range []string{"", "cpu0 1 2 3 4 5 6 7\n", "cpu0 1 2 x 4 5 6 7 8 9 10\n", "cpux 1 2 3 4 5 6 7 8 9 10\n"} {
		if _, err := parseProcStat(bad); err == nil {
			t.Errorf("parseProcStat(%q): no error; want one", bad)
		}
	}
}

func TestParsePidStat(t *testing.T) {
	// A comm may hold spaces and parentheses; the times are fields 14–17 of proc(5).
	text := "4242 (tmux: (server)) S 1 4242 4242 0 -1 4194560 1234 0 0 0 310 42 7 3 20 0 1 0 5631 9400320 1024 18446744073709551615 1 1 0 0 0 0 0 4096 134433283 0 0 0 17 1 0 0 0 0 0\n"
	got, err := parsePidStat(text)
	if err != nil {
		t.Fatal(err)
	}
	if want := (procTimes{name: "tmux: (server)", flags: 4194560, utime: 310, stime: 42, cutime: 7, cstime: 3}); got != want || got.kernel() {
		t.Errorf("parsePidStat = %+v; want %+v, not a kernel thread", got, want)
	}
	// A kernel thread: PF_KTHREAD (0x00200000) in the flags.
	kt := "22 (ksoftirqd/1) S 2 0 0 0 -1 69238848 0 0 0 0 3 95 0 0 20 0 1 0 8 0 0 18446744073709551615 0 0 0 0 0 0 0 2147483647 0 0 0 0 17 1 0 0 0 0 0\n"
	if got, err := parsePidStat(kt); err != nil || !got.kernel() || got.name != "ksoftirqd/1" || got.stime != 95 {
		t.Errorf("parsePidStat(ksoftirqd/1) = %+v, %v; want a kernel thread with stime 95", got, err)
	}
}

func TestStatCPUs(t *testing.T) {
	all, _ := parseProcStat(statText(make([]cpuCounters, 8)...))
	for _, c := range []struct {
		in   string
		want []int
	}{{"1", []int{1}}, {"0-2,6", []int{0, 1, 2, 6}}, {"3,1,3", []int{1, 3}}, {"", []int{0, 1, 2, 3, 4, 5, 6, 7}}} {
		got, err := statCPUs(c.in, all)
		if err != nil || fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("statCPUs(%q) = %v, %v; want %v", c.in, got, err, c.want)
		}
	}
	for _, bad := range []string{"8", "2-1", "a", "1,"} {
		if _, err := statCPUs(bad, all); err == nil {
			t.Errorf("statCPUs(%q): no error; want one", bad)
		}
	}
}

// TestKernelThreadsOnTheMeasuredCPUs: a kernel thread bound to the measured CPUs counts
// wholly, an unbound one for what the other CPUs cannot have run, a user process or a kernel
// thread bound elsewhere not at all.
func TestKernelThreadsOnTheMeasuredCPUs(t *testing.T) {
	k := func(name string, ran time.Duration, cpus ...int) procTimes {
		return procTimes{name: name, flags: pfKThread, ran: ran, mask: maskOf(cpus)}
	}
	a := map[int]procTimes{
		22:  k("ksoftirqd/1", time.Second, 1),
		12:  k("kworker/u8:0-events_unbound", 5*time.Second, 0, 1),
		14:  k("ksoftirqd/0", time.Second, 0),
		500: {name: "hog", utime: 100, ran: time.Second, mask: maskOf([]int{1})},
	}
	b := map[int]procTimes{
		22:  k("ksoftirqd/1", 1020*time.Millisecond, 1),
		12:  k("kworker/u8:0-kvfree_rcu_reclaim", 5040*time.Millisecond, 0, 1), // renamed: the same thread
		14:  k("ksoftirqd/0", 1500*time.Millisecond, 0),
		600: k("kworker/1:2-events", 5*time.Millisecond, 1),                          // new since a
		500: {name: "hog", utime: 400, ran: 4 * time.Second, mask: maskOf([]int{1})}, // not a kernel thread
	}
	for _, c := range []struct {
		elsewhere      time.Duration
		bound, unbound time.Duration
	}{
		{0, 25 * time.Millisecond, 40 * time.Millisecond},
		{15 * time.Millisecond, 25 * time.Millisecond, 25 * time.Millisecond},
		{50 * time.Millisecond, 25 * time.Millisecond, 0},
		{-5 * time.Millisecond, 25 * time.Millisecond, 40 * time.Millisecond},
	} {
		bound, unbound := kernelOn(a, b, []int{1}, c.elsewhere)
		if bound != c.bound || unbound != c.unbound {
			t.Errorf("kernelOn(elsewhere %v) = %v, %v; want %v bound, %v unbound", c.elsewhere, bound, unbound, c.bound, c.unbound)
		}
	}
}
