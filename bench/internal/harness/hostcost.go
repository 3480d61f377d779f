package harness

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// What the processes under test spend per request, from Linux's /proc, read before and after
// each measured run: CPU time, context switches, and read and write calls. These need no perf
// and no tracer, so they cost the run nothing. Context switches and call counts hardly move
// with noise on the machine; CPU time per request moves less than requests/s does, but it is
// still time (bench/README.md, "Host cost per request").

// PerRequest is one process's (or a tree's) spending in a run, divided by the requests wrk
// completed.
type PerRequest struct {
	// CPUus is user + system CPU time in µs (/proc/PID/stat utime+stime, and cutime+cstime
	// for children reaped during the run), counted in clock ticks of 10 ms: fine over a run
	// of thousands of requests, meaningless over a few.
	CPUus float64 `json:"cpu_us"`
	// Voluntary and Involuntary are context switches (/proc/PID/task/*/status
	// voluntary_ctxt_switches, nonvoluntary_ctxt_switches), summed over the tasks that
	// lived through the run: a voluntary one is a task that blocked (a read on an empty
	// pipe, epoll_wait, a futex), an involuntary one a task the scheduler preempted.
	Voluntary   float64 `json:"voluntary_ctx_switches"`
	Involuntary float64 `json:"involuntary_ctx_switches"`
	// RWCalls is /proc/PID/io syscr + syscw: the read-family and write-family system calls
	// (read, readv, pread, write, writev, ...; each counts whether it moved bytes or returned
	// EAGAIN). Not every system call: epoll_wait, futex, accept, sendto/recvfrom, nanosleep
	// and the like are not in it. make bench-counts counts every call (tracers.go).
	RWCalls float64 `json:"read_write_calls"`
}

// CtxSwitches is voluntary and involuntary context switches together.
func (p PerRequest) CtxSwitches() float64 { return p.Voluntary + p.Involuntary }

// HostCost is what a configuration's processes spent in one measured run, per request.
type HostCost struct {
	Requests int64 `json:"requests"`
	// Front is the process the client talks to: the watchdog, the relay, the server, the
	// proxy. Tree is every process of the configuration, the front included.
	Front PerRequest `json:"front"`
	Tree  PerRequest `json:"tree"`
	// LoadWakeIPIs are the wake-up interrupts wrk's CPU received per request (loadwakes.go):
	// how often a response found the client asleep. Absent when wrk is not pinned or the
	// kernel does not count them (and in runs from before them).
	LoadWakeIPIs *float64 `json:"load_wake_ipis,omitempty"`
}

// procCounters are one process's cumulative counters at one moment.
type procCounters struct {
	cpuTicks    int64 // utime + stime + cutime + cstime
	voluntary   int64
	involuntary int64
	rwCalls     int64
}

func (a procCounters) minus(b procCounters) procCounters {
	return procCounters{a.cpuTicks - b.cpuTicks, a.voluntary - b.voluntary, a.involuntary - b.involuntary, a.rwCalls - b.rwCalls}
}

func (a procCounters) plus(b procCounters) procCounters {
	return procCounters{a.cpuTicks + b.cpuTicks, a.voluntary + b.voluntary, a.involuntary + b.involuntary, a.rwCalls + b.rwCalls}
}

// treeSample is the counters of every process of a tree, by pid.
type treeSample struct {
	root  int
	procs map[int]procCounters
}

// sampleTree reads the counters of root and every process below it. A process that exits
// while it is read is left out.
func sampleTree(root int) treeSample {
	s := treeSample{root: root, procs: map[int]procCounters{}}
	for _, pid := range append([]int{root}, descendants(root)...) {
		if c, err := readProcCounters(pid); err == nil {
			s.procs[pid] = c
		}
	}
	return s
}

// clockTick is USER_HZ, the unit of /proc/PID/stat's times: 100 on every Linux that Go runs
// on (the kernel exports it to user space as a constant, whatever its internal HZ).
const clockTick = 100

// hostCost divides what the tree spent between two samples by the requests completed. A
// process present in both samples counts its difference; one that started during the run
// counts everything it has; one that exited is left out (its CPU time reaches its parent's
// cutime once reaped: fork per request's).
func hostCost(before, after treeSample, requests int64) *HostCost {
	if requests <= 0 {
		return nil
	}
	var front, tree procCounters
	for pid, a := range after.procs {
		d := a
		if b, ok := before.procs[pid]; ok {
			d = a.minus(b)
		}
		tree = tree.plus(d)
		if pid == after.root {
			front = d
		}
	}
	per := func(c procCounters) PerRequest {
		n := float64(requests)
		return PerRequest{
			CPUus:       float64(c.cpuTicks) * 1e6 / clockTick / n,
			Voluntary:   float64(c.voluntary) / n,
			Involuntary: float64(c.involuntary) / n,
			RWCalls:     float64(c.rwCalls) / n,
		}
	}
	return &HostCost{Requests: requests, Front: per(front), Tree: per(tree)}
}

// measure is one measured run of the load against s, with what s's processes spent on it.
func (s *server) measure(load Load, w Workload, conns int, d time.Duration) (LoadResult, error) {
	root := s.cmd.Process.Pid
	loadCPUs, _ := cpuList(load.CPU) // an unpinned or unreadable list: no wake-ups counted
	ipisBefore, ipiErr := readWakeIPIs(loadCPUs)
	before := sampleTree(root)
	r, err := load.Run(s.url(), w, conns, d)
	if err != nil {
		return r, err
	}
	r.Host = hostCost(before, sampleTree(root), r.Requests)
	ipisAfter, ipiErrAfter := readWakeIPIs(loadCPUs)
	if r.Host != nil && ipiErr == nil && ipiErrAfter == nil {
		perRequest := float64(ipisAfter-ipisBefore) / float64(r.Requests)
		r.Host.LoadWakeIPIs = &perRequest
	}
	return r, nil
}

func readProcCounters(pid int) (procCounters, error) {
	dir := fmt.Sprintf("/proc/%d", pid)
	stat, err := os.ReadFile(dir + "/stat")
	if err != nil {
		return procCounters{}, err
	}
	var c procCounters
	if c.cpuTicks, err = parseStatCPU(string(stat)); err != nil {
		return c, err
	}
	io, err := os.ReadFile(dir + "/io")
	if err != nil {
		return c, err
	}
	if c.rwCalls, err = parseIOCalls(string(io)); err != nil {
		return c, err
	}
	tasks, _ := filepath.Glob(dir + "/task/*/status")
	for _, t := range tasks {
		b, err := os.ReadFile(t)
		if err != nil {
			continue // a thread that ended
		}
		v, n, err := parseCtxSwitches(string(b))
		if err != nil {
			return c, err
		}
		c.voluntary += v
		c.involuntary += n
	}
	return c, nil
}

// parseStatCPU returns utime + stime + cutime + cstime of a /proc/PID/stat text, in clock
// ticks. The fields are counted after the command name's closing parenthesis, which may
// itself hold spaces and parentheses.
func parseStatCPU(text string) (int64, error) {
	i := strings.LastIndexByte(text, ')')
	if i < 0 {
		return 0, fmt.Errorf("harness: /proc/PID/stat without a command name: %q", text)
	}
	f := strings.Fields(text[i+1:])
	// f[0] is field 3 (state); utime..cstime are fields 14..17.
	if len(f) < 15 {
		return 0, fmt.Errorf("harness: /proc/PID/stat has %d fields after the name, want 15 or more: %q", len(f), text)
	}
	var sum int64
	for _, s := range f[11:15] {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("harness: bad time %q in /proc/PID/stat", s)
		}
		sum += n
	}
	return sum, nil
}

// parseIOCalls returns syscr + syscw of a /proc/PID/io text.
func parseIOCalls(text string) (int64, error) {
	kv, err := keyValues(text)
	if err != nil {
		return 0, err
	}
	r, okR := kv["syscr"]
	w, okW := kv["syscw"]
	if !okR || !okW {
		return 0, fmt.Errorf("harness: /proc/PID/io without syscr and syscw: %q", text)
	}
	return r + w, nil
}

// parseCtxSwitches returns the voluntary and involuntary context switches of a
// /proc/PID/status text.
func parseCtxSwitches(text string) (voluntary, involuntary int64, err error) {
	kv, err := keyValues(text)
	if err != nil {
		return 0, 0, err
	}
	v, okV := kv["voluntary_ctxt_switches"]
	n, okN := kv["nonvoluntary_ctxt_switches"]
	if !okV || !okN {
		return 0, 0, fmt.Errorf("harness: /proc/PID/status without voluntary_ctxt_switches and nonvoluntary_ctxt_switches")
	}
	return v, n, nil
}

// keyValues reads the "key: integer" lines of a /proc text; lines whose value is not an
// integer are skipped.
func keyValues(text string) (map[string]int64, error) {
	kv := map[string]int64{}
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		if n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64); err == nil {
			kv[strings.TrimSpace(k)] = n
		}
	}
	return kv, sc.Err()
}

// HostSpread is the medians over a configuration's repetitions of its host cost.
type HostSpread struct {
	TreeCPUus      Spread `json:"tree_cpu_us"`
	FrontCPUus     Spread `json:"front_cpu_us"`
	FrontCtxSwitch Spread `json:"front_ctx_switches"`
	FrontRWCalls   Spread `json:"front_read_write_calls"`
	TreeCtxSwitch  Spread `json:"tree_ctx_switches"`
	TreeRWCalls    Spread `json:"tree_read_write_calls"`
}

// hostSpread summarises the runs that carry a host cost; nil when none does.
func hostSpread(runs []LoadResult) *HostSpread {
	var tc, fc, fx, fr, tx, tr []float64
	for _, r := range runs {
		if h := r.Host; h != nil {
			tc, fc = append(tc, h.Tree.CPUus), append(fc, h.Front.CPUus)
			fx, fr = append(fx, h.Front.CtxSwitches()), append(fr, h.Front.RWCalls)
			tx, tr = append(tx, h.Tree.CtxSwitches()), append(tr, h.Tree.RWCalls)
		}
	}
	if len(tc) == 0 {
		return nil
	}
	return &HostSpread{spreadOf(tc), spreadOf(fc), spreadOf(fx), spreadOf(fr), spreadOf(tx), spreadOf(tr)}
}
