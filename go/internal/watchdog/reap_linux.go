package watchdog

import (
	"os"
	"os/signal"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// siginfo is the head of the kernel's siginfo_t for waitid: the union that
// holds si_pid starts at pointer alignment.
type siginfo struct {
	signo, errno, code int32
	_                  [unsafe.Sizeof(uintptr(0)) - 4]byte
	pid                int32
	_                  [128]byte
}

// startReaper reaps orphans re-parented to the watchdog when it runs as
// PID 1 in a container, without stealing the exit status of its own workers:
// it peeks with WNOWAIT and reaps only pids that are not workers.
func startReaper() {
	ch := make(chan os.Signal, 8)
	signal.Notify(ch, syscall.SIGCHLD)
	go func() {
		// The ticker catches orphans hidden behind a worker's zombie, which
		// waitid(P_ALL) keeps returning until the worker's own Wait reaps it.
		tick := time.NewTicker(time.Second)
		for {
			select {
			case <-ch:
			case <-tick.C:
			}
			reapOrphans()
		}
	}()
}

func reapOrphans() {
	for {
		var info siginfo
		_, _, e := unix.Syscall6(unix.SYS_WAITID, unix.P_ALL, 0, uintptr(unsafe.Pointer(&info)),
			unix.WEXITED|unix.WNOHANG|unix.WNOWAIT, 0, 0)
		if e == unix.EINTR {
			continue
		}
		if e != 0 || info.pid == 0 {
			return
		}
		pid := int(info.pid)
		procs.mu.Lock()
		worker := procs.pids[pid]
		if !worker {
			var ws unix.WaitStatus
			unix.Wait4(pid, &ws, unix.WNOHANG, nil)
		}
		procs.mu.Unlock()
		if worker {
			return // its goroutine reaps it; look again on the next signal or tick
		}
	}
}
