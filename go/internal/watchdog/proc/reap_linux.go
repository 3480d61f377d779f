package proc

import (
	"os"
	"os/signal"
	"sync"
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

// reaper counts who needs the orphan reaper: PID 1, and each pool in fork
// mode (tests run several, one after another).
var reaper struct {
	mu    sync.Mutex
	users int
	stop  chan struct{}
}

// StartReaper reaps orphans re-parented to the watchdog when it runs as
// PID 1 in a container, or as a child subreaper in fork mode (PROTOCOL.md
// §2.6), without stealing the exit status of its own workers: it peeks with
// WNOWAIT and reaps only pids that are not workers. The returned function
// stops it once no other user needs it.
func StartReaper() (release func()) {
	reaper.mu.Lock()
	defer reaper.mu.Unlock()
	reaper.users++
	if reaper.users == 1 {
		stop := make(chan struct{})
		reaper.stop = stop
		ch := make(chan os.Signal, 8)
		signal.Notify(ch, syscall.SIGCHLD)
		go func() {
			defer signal.Stop(ch)
			// The ticker catches orphans hidden behind a worker's zombie, which
			// waitid(P_ALL) keeps returning until the worker's own Wait reaps it.
			tick := time.NewTicker(time.Second)
			defer tick.Stop()
			for {
				select {
				case <-ch:
				case <-tick.C:
				case <-stop:
					return
				}
				reapOrphans()
			}
		}()
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			reaper.mu.Lock()
			defer reaper.mu.Unlock()
			if reaper.users--; reaper.users == 0 {
				close(reaper.stop)
			}
		})
	}
}

// BecomeSubreaper makes the watchdog the parent of orphaned descendants, so
// that a forked worker, whose parent (the middle process) exits at once, is
// re-parented to it (PROTOCOL.md §2.6).
func BecomeSubreaper() error {
	return unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
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
		Procs.Mu.Lock()
		// PROTOCOL.md §2.6: an unknown child may be a forked worker whose
		// pid is on its way; it stays a zombie until the answer registers it.
		worker := Procs.Pids[pid] || Procs.Forking > 0
		if !worker {
			var ws unix.WaitStatus
			unix.Wait4(pid, &ws, unix.WNOHANG, nil)
		}
		Procs.Mu.Unlock()
		if worker {
			return // its goroutine reaps it; look again on the next signal or tick
		}
	}
}
