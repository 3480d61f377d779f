package harness

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"runtime"
	"syscall"
	"time"
	"unsafe"
)

// The quiet-run guard's calibration: a fixed piece of CPU-bound work, timed on the measured
// CPUs just before and just after each run. A host that gives the VM less of its CPU (a busy
// hyperthread sibling, a lower clock, a quota) makes it slower even when the guest's steal
// counter shows nothing; a process of the guest's own on the CPU makes it slower too.

// calibrationWork is SHA-256 over 8 MiB, a 64 KiB buffer 128 times: about 6 ms on the
// 2-CPU VMs the benchmarks were written on, long enough to time to a fraction of a percent,
// short enough to run around every run. A calibration is the fastest of three in a row: a
// CPU that is slower stays slower for all three, while a kernel thread finishing the run's
// deferred work (RCU frees after the fork baseline) takes a millisecond out of one; the
// others' CPU figure is there for what runs beside the tree.
const (
	calibrationBlock  = 64 << 10
	calibrationRounds = 128
	calibrationTrials = 3
	calibrationWork   = "SHA-256 of 8 MiB (64 KiB × 128), fastest of 3"
)

var calibrationBuf = bytes.Repeat([]byte("0123456789abcdef"), calibrationBlock/16)

// calibrate does the fixed work on a thread pinned to cpus, as taskset pins the servers
// (sched_setaffinity), and returns its wall time. The thread is one of the harness's rather
// than a child's: a child would add its exec and first page faults to a few milliseconds of
// work.
func calibrate(cpus []int) (time.Duration, error) {
	type result struct {
		d   time.Duration
		err error
	}
	done := make(chan result)
	go func() {
		// The thread goes back to the runtime afterwards with its mask as it was. It must not
		// exit (as a thread locked at its goroutine's end does): every server is started with
		// Pdeathsig, which the kernel sends when the *thread* that forked it ends.
		runtime.LockOSThread()
		var old cpuMask
		if err := old.get(); err != nil {
			runtime.UnlockOSThread()
			done <- result{err: err}
			return
		}
		if err := pinThread(cpus); err != nil {
			runtime.UnlockOSThread()
			done <- result{err: err}
			return
		}
		h := sha256.New()
		h.Write(calibrationBuf) // the buffer into this CPU's cache, the code into its i-cache
		var d time.Duration
		for i := range calibrationTrials {
			start := time.Now()
			for range calibrationRounds {
				h.Write(calibrationBuf)
			}
			if t := time.Since(start); i == 0 || t < d {
				d = t
			}
		}
		h.Sum(nil)
		if err := old.set(); err != nil {
			// Left pinned, the thread would carry the harness's work onto the measured CPUs;
			// it is kept here, parked, and the run stops on the error.
			done <- result{err: err}
			select {}
		}
		runtime.UnlockOSThread()
		done <- result{d: d}
	}()
	r := <-done
	return r.d, r.err
}

// cpuMask is a thread's CPU affinity, for up to 1024 CPUs.
type cpuMask [16]uint64

func (m *cpuMask) get() error {
	_, _, errno := syscall.RawSyscall(syscall.SYS_SCHED_GETAFFINITY, 0, unsafe.Sizeof(*m), uintptr(unsafe.Pointer(m)))
	if errno != 0 {
		return fmt.Errorf("calibration: sched_getaffinity: %v", errno)
	}
	return nil
}

// set sets the calling thread's affinity; sched_setaffinity moves the thread before it
// returns when it is running elsewhere.
func (m *cpuMask) set() error {
	_, _, errno := syscall.RawSyscall(syscall.SYS_SCHED_SETAFFINITY, 0, unsafe.Sizeof(*m), uintptr(unsafe.Pointer(m)))
	if errno != 0 {
		return fmt.Errorf("calibration: sched_setaffinity: %v", errno)
	}
	return nil
}

// pinThread sets the calling thread's affinity to cpus.
func pinThread(cpus []int) error {
	var m cpuMask
	for _, c := range cpus {
		if c < 0 || c >= len(m)*64 {
			return fmt.Errorf("calibration: CPU %d out of range", c)
		}
		m[c/64] |= 1 << (c % 64)
	}
	if err := m.set(); err != nil {
		return fmt.Errorf("%v (CPUs %v)", err, cpus)
	}
	return nil
}
