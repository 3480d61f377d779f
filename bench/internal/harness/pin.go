package harness

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"unsafe"
)

// PinSelf pins every thread of this process to cpus (a taskset list: "0", "0-1,3"), and so
// every thread it starts later, which inherits its creator's mask. make bench-counts runs its
// client in its own process, and a client thread that the scheduler put on the CPU under
// test would preempt the server there and count as its context switches. Unlike running the
// whole program under taskset, this leaves runtime.NumCPU (read at start) the machine's.
func PinSelf(cpus string) error {
	if cpus == "" {
		return nil
	}
	set, err := parseCPUList(cpus)
	if err != nil {
		return err
	}
	tasks, err := filepath.Glob("/proc/self/task/*")
	if err != nil || len(tasks) == 0 {
		return fmt.Errorf("harness: cannot list this process's threads to pin them: %v", err)
	}
	for _, t := range tasks {
		tid, err := strconv.Atoi(filepath.Base(t))
		if err != nil {
			continue
		}
		_, _, e := syscall.RawSyscall(syscall.SYS_SCHED_SETAFFINITY, uintptr(tid), unsafe.Sizeof(set), uintptr(unsafe.Pointer(&set)))
		if e != 0 && e != syscall.ESRCH {
			return fmt.Errorf("harness: pinning thread %d to CPU %s: %v", tid, cpus, os.NewSyscallError("sched_setaffinity", e))
		}
	}
	return nil
}

// cpuSet is a kernel CPU mask for up to 1024 CPUs.
type cpuSet [16]uint64

// parseCPUList reads a taskset CPU list: numbers and ranges, comma-separated.
func parseCPUList(s string) (cpuSet, error) {
	var set cpuSet
	for _, part := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err1 := strconv.Atoi(lo)
		b, err2 := a, error(nil)
		if isRange {
			b, err2 = strconv.Atoi(hi)
		}
		if err1 != nil || err2 != nil || a < 0 || b < a || b >= len(set)*64 {
			return set, fmt.Errorf("harness: bad CPU list %q", s)
		}
		for c := a; c <= b; c++ {
			set[c/64] |= 1 << (c % 64)
		}
	}
	return set, nil
}
