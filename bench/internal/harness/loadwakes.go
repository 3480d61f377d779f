package harness

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unsafe"
)

// The load generator's wake-ups. wrk sleeps in epoll_wait on its own CPU whenever no
// response is ready, and the response that ends the sleep is written on the CPU under test:
// the kernel wakes wrk from there with an inter-processor interrupt, and the writer pays for
// sending it. On the VMs these benchmarks run on, an interrupt costs the sender a VM exit,
// about 7 µs of its CPU (wakeCost), a third of the watchdog's whole time per request. How
// often wrk is asleep when a response comes depends on how busy it is, so on the server's
// rate: a faster server finds it awake more often. So part of what a faster configuration
// saves is wake-ups of the client, counted here per request from the interrupts wrk's CPU
// received (rescheduling and function-call interrupts, /proc/interrupts RES and CAL), which
// no server deployed behind a network pays.

// wakeIPIRows are the rows of /proc/interrupts that count the interrupts a CPU receives to
// wake a task: the wake list's function calls and reschedules (x86).
var wakeIPIRows = []string{"RES:", "CAL:"}

// errNoWakeIPIs is a /proc/interrupts without the x86 rows (an arm64 kernel names its IPIs
// otherwise): the count is then left out of the run, not guessed.
var errNoWakeIPIs = errors.New("harness: /proc/interrupts has no RES and CAL rows")

// parseWakeIPIs sums the wake-up interrupts that cpus received, from a /proc/interrupts
// text: its first line names the columns (CPU0 CPU1 ..., online CPUs only), each row gives a
// count per column.
func parseWakeIPIs(text string, cpus []int) (int64, error) {
	lines := strings.Split(text, "\n")
	column := map[int]int{}
	for i, f := range strings.Fields(lines[0]) {
		n, err := strconv.Atoi(strings.TrimPrefix(f, "CPU"))
		if !strings.HasPrefix(f, "CPU") || err != nil {
			return 0, fmt.Errorf("harness: /proc/interrupts header field %q is not CPUn", f)
		}
		column[n] = i
	}
	var sum int64
	found := 0
	for _, line := range lines[1:] {
		f := strings.Fields(line)
		if len(f) == 0 || !slices.Contains(wakeIPIRows, f[0]) {
			continue
		}
		found++
		for _, c := range cpus {
			i, ok := column[c]
			if !ok || 1+i >= len(f) {
				return 0, fmt.Errorf("harness: /proc/interrupts has no column for CPU %d", c)
			}
			n, err := strconv.ParseInt(f[1+i], 10, 64)
			if err != nil {
				return 0, fmt.Errorf("harness: /proc/interrupts %s CPU %d: %q is not a count", f[0], c, f[1+i])
			}
			sum += n
		}
	}
	if found != len(wakeIPIRows) {
		return 0, errNoWakeIPIs
	}
	return sum, nil
}

// errNoLoadCPU is a run whose wrk is not pinned: no CPU of its own to count wake-ups on.
var errNoLoadCPU = errors.New("harness: wrk is not pinned to a CPU")

// readWakeIPIs is parseWakeIPIs of this machine's /proc/interrupts, for at least one CPU.
func readWakeIPIs(cpus []int) (int64, error) {
	if len(cpus) == 0 {
		return 0, errNoLoadCPU
	}
	b, err := os.ReadFile("/proc/interrupts")
	if err != nil {
		return 0, err
	}
	return parseWakeIPIs(string(b), cpus)
}

// cpuList is the CPUs of a taskset list, in order.
func cpuList(list string) ([]int, error) {
	set, err := parseCPUList(list)
	if err != nil {
		return nil, err
	}
	var out []int
	for c := 0; c < len(set)*64; c++ {
		if set[c/64]&(1<<(c%64)) != 0 {
			out = append(out, c)
		}
	}
	return out, nil
}

// wakeTrials is how many waking writes, and as many plain ones, wakeCost times: each waking
// one waits wakeIdle first, so that the sleeper's CPU has gone idle, as wrk's has between
// responses.
const (
	wakeTrials = 2000
	wakeIdle   = 200 * time.Microsecond
)

// wakeCost measures what waking a thread asleep on sleeperCPU costs the CPU that wakes it,
// wakerCPU: the waker's CPU time for a one-byte pipe write that wakes a reader blocked on
// that pipe, less the same write into a pipe nobody waits on; medians of wakeTrials each.
// Both threads are the harness's own, pinned as taskset pins the servers and wrk, and go back
// to the runtime with their masks restored (never ended: see calibrate).
func wakeCost(wakerCPU, sleeperCPU int) (time.Duration, error) {
	var req, ack, idle [2]int
	for _, p := range []*[2]int{&req, &ack, &idle} {
		if err := syscall.Pipe2(p[:], syscall.O_CLOEXEC); err != nil {
			return 0, fmt.Errorf("wake cost: pipe: %v", err)
		}
	}
	defer func() {
		for _, fd := range []int{req[0], req[1], ack[0], ack[1], idle[0], idle[1]} {
			if fd >= 0 {
				syscall.Close(fd)
			}
		}
	}()
	sleeper := onPinnedThread(sleeperCPU, func() error {
		b := make([]byte, 1)
		for range wakeTrials {
			if n, err := syscall.Read(req[0], b); n != 1 {
				return fmt.Errorf("wake cost: sleeper's read: %d, %v", n, err)
			}
			if n, err := syscall.Write(ack[1], b); n != 1 {
				return fmt.Errorf("wake cost: sleeper's answer: %d, %v", n, err)
			}
		}
		return nil
	})
	var waking, plain []float64
	waker := onPinnedThread(wakerCPU, func() error {
		b := []byte{'w'}
		pause := syscall.NsecToTimespec(int64(wakeIdle))
		for range wakeTrials {
			syscall.Nanosleep(&pause, nil)
			start := threadCPU()
			if n, err := syscall.Write(req[1], b); n != 1 {
				return fmt.Errorf("wake cost: waking write: %d, %v", n, err)
			}
			waking = append(waking, float64(threadCPU()-start))
			if n, err := syscall.Read(ack[0], b); n != 1 {
				return fmt.Errorf("wake cost: the sleeper's answer: %d, %v", n, err)
			}
			start = threadCPU()
			if n, err := syscall.Write(idle[1], b); n != 1 {
				return fmt.Errorf("wake cost: plain write: %d, %v", n, err)
			}
			plain = append(plain, float64(threadCPU()-start))
			if n, err := syscall.Read(idle[0], b); n != 1 {
				return fmt.Errorf("wake cost: reading the plain write back: %d, %v", n, err)
			}
		}
		return nil
	})
	// Either side failing leaves the other waiting on a pipe: closing its far end ends that
	// read (the fds are closed only here, once both goroutines have sent).
	var wakerErr, sleeperErr error
	select {
	case wakerErr = <-waker:
		if wakerErr != nil {
			syscall.Close(req[1])
			req[1] = -1
		}
		sleeperErr = <-sleeper
	case sleeperErr = <-sleeper:
		if sleeperErr != nil {
			syscall.Close(ack[1])
			ack[1] = -1
		}
		wakerErr = <-waker
	}
	if err := errors.Join(wakerErr, sleeperErr); err != nil {
		return 0, err
	}
	return time.Duration(spreadOf(waking).Median - spreadOf(plain).Median), nil
}

// onPinnedThread runs f on a goroutine locked to a thread of its own, pinned to cpu, and
// sends f's error once the thread's mask is restored. A thread left pinned would carry the
// harness's work onto a measured CPU, so on that failure it is kept, parked, as calibrate
// keeps its own.
func onPinnedThread(cpu int, f func() error) <-chan error {
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		var old cpuMask
		if err := old.get(); err != nil {
			runtime.UnlockOSThread()
			done <- err
			return
		}
		if err := pinThread([]int{cpu}); err != nil {
			runtime.UnlockOSThread()
			done <- err
			return
		}
		ferr := f()
		if err := old.set(); err != nil {
			done <- errors.Join(ferr, err)
			select {}
		}
		runtime.UnlockOSThread()
		done <- ferr
	}()
	return done
}

// threadCPU is the calling thread's CPU time (CLOCK_THREAD_CPUTIME_ID), ns.
func threadCPU() int64 {
	var ts syscall.Timespec
	const clockThreadCPUTimeID = 3
	syscall.RawSyscall(syscall.SYS_CLOCK_GETTIME, clockThreadCPUTimeID, uintptr(unsafe.Pointer(&ts)), 0)
	return ts.Nano()
}
