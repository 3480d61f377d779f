package harness

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unsafe"
)

// Kernel threads on the measured CPUs are not others: they do the measured tree's own
// deferred work. Measured here: the fork baseline of the Go function on CPU 1 (about 900
// forks a second) showed 2.3–2.4 % of others' CPU on a quiet machine, and what accounted for
// it was ksoftirqd/1 (softirqs, RCU callbacks) and an unbound kworker in kvfree_rcu_reclaim,
// freeing what the forked processes left. A process of user space, a hog, is never one of
// them. So the guard takes kernel threads' time away from others' CPU and reports it apart
// (Guard.KernelPct), not judged.
//
// A kernel thread bound to the measured CPUs (ksoftirqd/1, kworker/1:*) ran there. An
// unbound one (kworker/u8:*) may have run anywhere: it counts on the measured CPUs only for
// the part that cannot have run on the others, its time less what the other CPUs did besides
// wrk. That errs towards calling a run noisy.

// kthreadTimes adds a kernel thread's run time (schedstat, ns: a kernel thread has one task)
// and the CPUs it may run on.
func kthreadTimes(pid int, t procTimes) procTimes {
	if b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/schedstat"); err == nil {
		if f := strings.Fields(string(b)); len(f) > 0 {
			n, _ := strconv.ParseInt(f[0], 10, 64)
			t.ran = time.Duration(n)
		}
	}
	if t.ran == 0 {
		t.ran = time.Duration(t.utime+t.stime) * tick
	}
	t.mask.getPid(pid)
	return t
}

func (m *cpuMask) getPid(pid int) error {
	_, _, errno := syscall.RawSyscall(syscall.SYS_SCHED_GETAFFINITY, uintptr(pid), unsafe.Sizeof(*m), uintptr(unsafe.Pointer(m)))
	if errno != 0 {
		return fmt.Errorf("sched_getaffinity %d: %v", pid, errno)
	}
	return nil
}

func maskOf(cpus []int) cpuMask {
	var m cpuMask
	for _, c := range cpus {
		if c >= 0 && c < len(m)*64 {
			m[c/64] |= 1 << (c % 64)
		}
	}
	return m
}

// within reports whether every CPU of m is in n; an empty m is not within anything.
func (m cpuMask) within(n cpuMask) bool {
	any := false
	for i := range m {
		if m[i]&^n[i] != 0 {
			return false
		}
		any = any || m[i] != 0
	}
	return any
}

func (m cpuMask) meets(n cpuMask) bool {
	for i := range m {
		if m[i]&n[i] != 0 {
			return true
		}
	}
	return false
}

// kernelOn is the time kernel threads ran on cpus between a and b, at least: bound ones
// wholly, unbound ones less elsewhere, the time the other CPUs were busy with anything but
// wrk (never below zero).
func kernelOn(a, b map[int]procTimes, cpus []int, elsewhere time.Duration) (bound, unbound time.Duration) {
	measured := maskOf(cpus)
	for pid, t := range b {
		if !t.kernel() || !t.mask.meets(measured) {
			continue
		}
		d := t.ran
		if prev, ok := a[pid]; ok && prev.kernel() { // by pid: a kworker renames itself after its workqueue
			d -= prev.ran
		}
		if d <= 0 {
			continue
		}
		if t.mask.within(measured) {
			bound += d
		} else {
			unbound += d
		}
	}
	return bound, max(0, unbound-max(0, elsewhere))
}
