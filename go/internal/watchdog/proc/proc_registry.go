package proc

import (
	"os/exec"
	"runtime"
	"sync"
)

// Procs is the process-wide set of live worker pids. The orphan reaper
// (reap_linux.go) leaves these to their own Wait, and every unknown child
// while forking is above zero: a forked worker is a child of the watchdog
// before its pid is known (PROTOCOL.md §2.6).
var Procs = struct {
	Mu      sync.Mutex
	Pids    map[int]bool
	Forking int // fork requests sent and not answered
}{Pids: map[int]bool{}}

type spawnReq struct {
	cmd  *exec.Cmd
	done chan error
}

var (
	spawnOnce sync.Once
	spawnCh   chan spawnReq
)

// StartProcess starts cmd from the one OS thread that forks every worker.
// PR_SET_PDEATHSIG fires when the forking thread exits, not the process
// (golang/go#27505), so that thread is locked and never exits.
func StartProcess(cmd *exec.Cmd) error {
	spawnOnce.Do(func() {
		spawnCh = make(chan spawnReq)
		go spawnLoop()
	})
	req := spawnReq{cmd: cmd, done: make(chan error, 1)}
	spawnCh <- req
	return <-req.done
}

func spawnLoop() {
	runtime.LockOSThread() // never unlocked: see startProcess
	for req := range spawnCh {
		// Registered under the lock the reaper holds, so it can never reap
		// a worker that died before it was registered.
		Procs.Mu.Lock()
		err := req.cmd.Start()
		if err == nil {
			Procs.Pids[req.cmd.Process.Pid] = true
		}
		Procs.Mu.Unlock()
		req.done <- err
	}
}

// ForgetProcess drops pid from the worker set once it was reaped.
func ForgetProcess(pid int) {
	Procs.Mu.Lock()
	delete(Procs.Pids, pid)
	Procs.Mu.Unlock()
}
