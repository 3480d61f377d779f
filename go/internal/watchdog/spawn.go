package watchdog

import (
	"os/exec"
	"runtime"
	"sync"
)

// spawner is how a worker comes to exist (PROTOCOL.md §10.2 spawn): one
// strategy per mode, each in its own file (spawn_exec.go, spawn_fork.go); the
// supervision and request paths do not know which made a worker.
type spawner interface {
	// start makes the worker of slot, handshake not yet sent; w.deadline
	// bounds its handshake. An *initError carries the restart reason.
	start(slot int) (*worker, error)
	// handshook reports the outcome of w's first handshake (nil: answered).
	handshook(w *worker, err error)
	// template is the template's state for /_/ready (§9.2) and its pid;
	// "" when there is no template mode.
	template() (state string, pid int)
	// close ends the spawner at shutdown (§9.4): the template is told to
	// exit by the end of its control socket.
	close()
}

// newSpawner is the spawner cfg.Spawn asks for.
func newSpawner(p *pool) spawner {
	ex := &execSpawner{cfg: p.cfg, log: p.log, m: p.m, iso: p.iso}
	if p.cfg.Spawn == SpawnFork {
		return newForkSpawner(p, ex)
	}
	return ex
}

// procs is the process-wide set of live worker pids. The orphan reaper
// (reap_linux.go) leaves these to their own Wait, and every unknown child
// while forking is above zero: a forked worker is a child of the watchdog
// before its pid is known (PROTOCOL.md §2.6).
var procs = struct {
	mu      sync.Mutex
	pids    map[int]bool
	forking int // fork requests sent and not answered
}{pids: map[int]bool{}}

type spawnReq struct {
	cmd  *exec.Cmd
	done chan error
}

var (
	spawnOnce sync.Once
	spawnCh   chan spawnReq
)

// startProcess starts cmd from the one OS thread that forks every worker.
// PR_SET_PDEATHSIG fires when the forking thread exits, not the process
// (golang/go#27505), so that thread is locked and never exits.
func startProcess(cmd *exec.Cmd) error {
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
		procs.mu.Lock()
		err := req.cmd.Start()
		if err == nil {
			procs.pids[req.cmd.Process.Pid] = true
		}
		procs.mu.Unlock()
		req.done <- err
	}
}

// forgetProcess drops pid from the worker set once it was reaped.
func forgetProcess(pid int) {
	procs.mu.Lock()
	delete(procs.pids, pid)
	procs.mu.Unlock()
}
