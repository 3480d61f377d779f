package watchdog

import (
	"sync"
	"time"
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

// spawnEnv is what a spawner needs from the pool that owns it, as plain
// values and callbacks: a spawner never takes the pool's lock, so the lock
// order (pool.mu before a spawner's own) holds by construction.
type spawnEnv struct {
	cfg *Config
	log *logger
	m   *metrics
	iso *isolation // isolation=request (§2.7); nil otherwise
	// stop is closed when the pool closes (§9.4).
	stop <-chan struct{}
	// wg is the pool's: its close waits for the spawner's goroutines.
	wg *sync.WaitGroup
	// changed wakes up whoever watches the pool's state (/_/ready shows the
	// template's, §9.2).
	changed func()
	// fatal reports an error the watchdog cannot serve on.
	fatal func(error)
}

func (e *spawnEnv) isClosing() bool {
	select {
	case <-e.stop:
		return true
	default:
		return false
	}
}

// sleep waits d unless the pool closes first.
func (e *spawnEnv) sleep(d time.Duration) bool { return sleepUnless(d, e.stop) }

// sleepUnless waits d and reports true, or false as soon as stop is closed.
func sleepUnless(d time.Duration, stop <-chan struct{}) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-stop:
		return false
	}
}

// newSpawner is the spawner env.cfg.Spawn asks for.
func newSpawner(env *spawnEnv) spawner {
	ex := &execSpawner{cfg: env.cfg, log: env.log, m: env.m, iso: env.iso}
	if env.cfg.Spawn == SpawnFork {
		return newForkSpawner(env, ex)
	}
	return ex
}
