package afterburn

import "runtime"

// spareProcessor gives the runtime a second processor while a lone lane serves on
// blocking pipes (openLanes) in a process whose GOMAXPROCS is 1, which is what Go
// chooses under a one-CPU limit or affinity, the usual function container. It returns
// what puts the old value back.
//
// Why: such a lane waits for each request in read(2), and the runtime's monitor takes
// the processor from a goroutine that it finds in the same system call twice, 20 µs
// apart, unless another processor is idle (retake in runtime/proc.go, Go 1.26). With
// one processor none ever is, so nearly every wait longer than 20 µs costs a handoff
// (a futex wake of a spinning thread that finds nothing to do) and keeps the monitor
// waking every 20 µs on the CPU the worker and the watchdog share. With an idle
// processor the monitor leaves a system call alone for 10 ms and backs off to 10 ms
// sleeps. Measured with two Go workers and the watchdog pinned to one CPU, hello at
// c=8 behind the watchdog's front (issue 29): 35.7k → 51–54k requests/s; per request
// in the worker, futex 0.24 → 0.04 and nanosleep 0.45 → 0.01; the watchdog's CPU
// 19 → 13.6 µs, what it costs in front of a C child.
//
// The second processor is idle while the lane waits and while the handler runs alone;
// it runs Go code in parallel only when the handler starts goroutines of its own (or
// the garbage collector's idle workers use it). A GOMAXPROCS set in the environment is
// the user's choice and is left alone (lookup reads the environment).
func spareProcessor(lookup func(string) (string, bool)) (restore func()) {
	if _, set := lookup("GOMAXPROCS"); set || runtime.GOMAXPROCS(0) != 1 {
		return func() {}
	}
	runtime.GOMAXPROCS(2)
	return func() { runtime.GOMAXPROCS(1) }
}
