package harness

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

// The readings of the quiet-run guard (quiet.go): what every CPU did, what the measured
// process tree did, and what every other process did, each read at both ends of a run.

// userHZ is the unit of /proc/stat and /proc/PID/stat: USER_HZ, 100 on every Linux
// architecture Go supports, whatever the kernel's own tick rate (CONFIG_HZ).
const userHZ = 100

const tick = time.Second / userHZ

// cpuCounters is one CPU's line of /proc/stat, in USER_HZ ticks.
type cpuCounters struct {
	User, Nice, System, Idle, IOWait, IRQ, SoftIRQ, Steal, Guest, GuestNice int64
}

// busy is the time the kernel charged to running something on the CPU: tasks in user and
// kernel mode and interrupts. Not idle or iowait (both idle), not steal (the hypervisor ran
// something else; reported on its own), not guest and guest_nice (already inside user and
// nice). irq and softirq are in because this kernel charges them to whatever task they
// interrupt (no CONFIG_IRQ_TIME_ACCOUNTING), so the measured tree's own time holds the
// interrupts that ran in its context.
func (c cpuCounters) busy() int64 { return c.User + c.Nice + c.System + c.IRQ + c.SoftIRQ }

// parseProcStat reads the per-CPU lines ("cpuN ...") of /proc/stat; the total line ("cpu")
// is left out.
func parseProcStat(text string) (map[int]cpuCounters, error) {
	out := map[int]cpuCounters{}
	for _, line := range strings.Split(text, "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || !strings.HasPrefix(f[0], "cpu") || f[0] == "cpu" {
			continue
		}
		n, err := strconv.Atoi(f[0][3:])
		if err != nil {
			return nil, fmt.Errorf("/proc/stat: bad CPU line %q", line)
		}
		if len(f) < 9 { // steal arrived in Linux 2.6.11; older lines are too short to guard with
			return nil, fmt.Errorf("/proc/stat: %d fields in %q; want at least 8 counters", len(f)-1, line)
		}
		var v [10]int64
		for i := 1; i < len(f) && i <= len(v); i++ {
			if v[i-1], err = strconv.ParseInt(f[i], 10, 64); err != nil {
				return nil, fmt.Errorf("/proc/stat: bad counter %q in %q", f[i], line)
			}
		}
		out[n] = cpuCounters{v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8], v[9]}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("/proc/stat: no per-CPU line")
	}
	return out, nil
}

// parseCPUAcct reads cpuacct.usage_percpu: nanoseconds that tasks ran on each CPU, by CPU
// number.
func parseCPUAcct(text string) ([]int64, error) {
	var out []int64
	for _, f := range strings.Fields(text) {
		v, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("cpuacct.usage_percpu: bad value %q", f)
		}
		out = append(out, v)
	}
	return out, nil
}

// cpuAcctPath is the root cgroup's per-CPU task time under cgroup v1. The root counts every
// task of the machine, in ns and in the same clock as the tree's own time (the scheduler's
// task clock: interrupts in, steal out), brought up to date at every switch and tick (so a
// task running at the moment of a reading is up to a tick behind). /proc/stat's busy
// counters instead charge a whole tick (4 ms at HZ=250) to whatever runs when it fires: on a
// CPU half idle in slices of tens of µs, a sample of 750 ticks in a 3 s run is about ±14
// ticks, ±1.8 % of the run, against a threshold of 2 %.
var cpuAcctPath = "/sys/fs/cgroup/cpuacct/cpuacct.usage_percpu"

// cpuSample is every CPU's counters at one instant.
type cpuSample struct {
	at   time.Time
	stat map[int]cpuCounters
	acct []int64 // nil where cgroup v1's cpuacct is not mounted
}

func readCPUs() (cpuSample, error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return cpuSample{}, err
	}
	s := cpuSample{at: time.Now()}
	if s.stat, err = parseProcStat(string(b)); err != nil {
		return s, err
	}
	if b, err := os.ReadFile(cpuAcctPath); err == nil {
		s.acct, _ = parseCPUAcct(string(b))
	}
	return s, nil
}

// busyBetween is the time spent running something on cpus between a and b, from cpuacct
// when both samples have it and /proc/stat's busy counters otherwise; source names which.
func busyBetween(a, b cpuSample, cpus []int) (d time.Duration, source string) {
	if a.acct != nil && b.acct != nil {
		ok := true
		for _, c := range cpus {
			if c >= len(a.acct) || c >= len(b.acct) {
				ok = false
			}
		}
		if ok {
			for _, c := range cpus {
				d += time.Duration(b.acct[c] - a.acct[c])
			}
			return d, "cpuacct"
		}
	}
	for _, c := range cpus {
		d += time.Duration(b.stat[c].busy()-a.stat[c].busy()) * tick
	}
	return d, "proc-stat"
}

func stealBetween(a, b cpuSample, cpus []int) (d time.Duration) {
	for _, c := range cpus {
		d += time.Duration(b.stat[c].Steal-a.stat[c].Steal) * tick
	}
	return d
}

// procTimes are the CPU figures of one process from /proc/PID/stat, in USER_HZ ticks, with
// its flags; for a kernel thread, kthreadTimes adds the rest.
type procTimes struct {
	name                         string
	flags                        uint64
	utime, stime, cutime, cstime int64
	ran                          time.Duration // kernel threads only: schedstat, ns
	mask                         cpuMask       // kernel threads only: the CPUs it may run on
}

// pfKThread is PF_KTHREAD in a process's flags (field 9 of /proc/PID/stat).
const pfKThread = 0x00200000

func (t procTimes) kernel() bool { return t.flags&pfKThread != 0 }

func parsePidStat(text string) (procTimes, error) {
	open, end := strings.IndexByte(text, '('), strings.LastIndexByte(text, ')')
	if open < 0 || end < open {
		return procTimes{}, fmt.Errorf("/proc/PID/stat: no (comm) in %q", text)
	}
	// After the comm: state is field 3 of proc(5), flags 9; utime, stime, cutime, cstime are
	// 14–17.
	f := strings.Fields(text[end+1:])
	if len(f) < 15 {
		return procTimes{}, fmt.Errorf("/proc/PID/stat: %d fields after the comm", len(f))
	}
	flags, err := strconv.ParseUint(f[6], 10, 64)
	if err != nil {
		return procTimes{}, fmt.Errorf("/proc/PID/stat: bad flags %q", f[6])
	}
	var v [4]int64
	for i := range v {
		n, err := strconv.ParseInt(f[11+i], 10, 64)
		if err != nil {
			return procTimes{}, fmt.Errorf("/proc/PID/stat: bad time %q", f[11+i])
		}
		v[i] = n
	}
	return procTimes{name: text[open+1 : end], flags: flags, utime: v[0], stime: v[1], cutime: v[2], cstime: v[3]}, nil
}

func readPidStat(pid int) (procTimes, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procTimes{}, err
	}
	return parsePidStat(string(b))
}

// threadsTime is the time the live threads of pid have run, to the nanosecond: the first
// field of /proc/PID/task/TID/schedstat.
func threadsTime(pid int) time.Duration {
	files, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/schedstat", pid))
	var d time.Duration
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		if fs := strings.Fields(string(b)); len(fs) > 0 {
			n, _ := strconv.ParseInt(fs[0], 10, 64)
			d += time.Duration(n)
		}
	}
	return d
}

// treeTime is the CPU time of the process tree under root: every process in it, each with
// the children it has reaped (a fork baseline reaps one per request). A process's own time
// is its live threads' schedstat (ns) or its utime+stime (whole ticks, with the threads
// that have exited), whichever is larger: the first is exact while no thread has exited,
// the second never more than two ticks short.
func treeTime(root int) (time.Duration, error) {
	var total time.Duration
	for i, pid := range append([]int{root}, descendants(root)...) {
		t, err := readPidStat(pid)
		if err != nil {
			if i == 0 {
				return 0, err
			}
			continue // exited since it was listed; its parent's cutime has it
		}
		own := max(threadsTime(pid), time.Duration(t.utime+t.stime)*tick)
		total += own + time.Duration(t.cutime+t.cstime)*tick
	}
	return total, nil
}

// allProcs reads every process's own utime+stime, to name the busiest processes outside
// the tree when a run is noisy, and every kernel thread's time and CPUs (quietkernel.go).
func allProcs() map[int]procTimes {
	ents, _ := os.ReadDir("/proc")
	out := make(map[int]procTimes, len(ents))
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if t, err := readPidStat(pid); err == nil {
			if t.kernel() {
				t = kthreadTimes(pid, t)
			}
			out[pid] = t
		}
	}
	return out
}

// busiest lists the n processes outside the tree that ran longest between a and b, on any
// CPU, as "comm[pid] 120 ms", and returns the time of all of them. A process that exited
// in between is not counted.
func busiest(a, b map[int]procTimes, tree map[int]bool, n int) ([]string, time.Duration) {
	type use struct {
		pid  int
		name string
		d    int64
	}
	var us []use
	var total int64
	for pid, t := range b {
		if tree[pid] {
			continue
		}
		if d := t.utime + t.stime - (a[pid].utime + a[pid].stime); d > 0 {
			us = append(us, use{pid, t.name, d})
			total += d
		}
	}
	sort.Slice(us, func(i, j int) bool { return us[i].d > us[j].d })
	var out []string
	for _, u := range us[:min(n, len(us))] {
		out = append(out, fmt.Sprintf("%s[%d] %d ms", u.name, u.pid, u.d*int64(tick/time.Millisecond)))
	}
	return out, time.Duration(total) * tick
}

// statCPUs is the CPUs of a taskset list ("1", "0-3,6", parsed by
// parseCPUList) in ascending order, each of which must be in /proc/stat; ""
// is every CPU there.
func statCPUs(list string, all map[int]cpuCounters) ([]int, error) {
	var out []int
	if list == "" {
		for c := range all {
			out = append(out, c)
		}
		sort.Ints(out)
		return out, nil
	}
	set, err := parseCPUList(list)
	if err != nil {
		return nil, err
	}
	for c := 0; c < len(set)*64; c++ {
		if set[c/64]&(1<<(c%64)) == 0 {
			continue
		}
		if _, ok := all[c]; !ok {
			return nil, fmt.Errorf("CPU list %q: no CPU %d in /proc/stat", list, c)
		}
		out = append(out, c)
	}
	return out, nil
}
