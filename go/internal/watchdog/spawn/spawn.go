package spawn

import (
	"sync"
	"time"

	"github.com/afterburn-dev/afterburn/go/internal/watchdog/config"
	"github.com/afterburn-dev/afterburn/go/internal/watchdog/obs"
	"github.com/afterburn-dev/afterburn/go/internal/watchdog/worker"
)

// Spawner is how a worker comes to exist (PROTOCOL.md §10.2 spawn): one
// strategy per mode, each in its own file (spawn_exec.go, spawn_fork.go); the
// supervision and request paths do not know which made a worker.
type Spawner interface {
	// Start makes the worker of slot, handshake not yet sent; w.deadline
	// bounds its handshake. An *initError carries the restart reason.
	Start(slot int) (*worker.Worker, error)
	// Handshook reports the outcome of w's first handshake (nil: answered).
	Handshook(w *worker.Worker, err error)
	// Template is the template's state for /_/ready (§9.2) and its pid;
	// "" when there is no template mode.
	Template() (state string, pid int)
	// Close ends the spawner at shutdown (§9.4): the template is told to
	// exit by the end of its control socket.
	Close()
}

// spawnEnv is what a spawner needs from the pool that owns it, as plain
// values and callbacks: a spawner never takes the pool's lock, so the lock
// order (pool.mu before a spawner's own) holds by construction.
type Env struct {
	Cfg *config.Config
	Log *obs.Logger
	M   *obs.Metrics
	Iso *Isolation // isolation=request (§2.7); nil otherwise
	// Stop is closed when the pool closes (§9.4).
	Stop <-chan struct{}
	// wg is the pool's: its close waits for the spawner's goroutines.
	WG *sync.WaitGroup
	// Changed wakes up whoever watches the pool's state (/_/ready shows the
	// template's, §9.2).
	Changed func()
	// Fatal reports an error the watchdog cannot serve on.
	Fatal func(error)
	// AutoLanes is the K a worker is offered under lanes=auto (§2.5).
	AutoLanes func() int
}

func (e *Env) isClosing() bool {
	select {
	case <-e.Stop:
		return true
	default:
		return false
	}
}

// sleep waits d unless the pool closes first.
func (e *Env) sleep(d time.Duration) bool { return SleepUnless(d, e.Stop) }

// SleepUnless waits d and reports true, or false as soon as stop is closed.
func SleepUnless(d time.Duration, stop <-chan struct{}) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-stop:
		return false
	}
}

// NewSpawner is the spawner env.cfg.Spawn asks for.
func NewSpawner(env *Env) Spawner {
	ex := &execSpawner{cfg: env.Cfg, log: env.Log, m: env.M, iso: env.Iso, autoLanes: env.AutoLanes}
	if env.Cfg.Spawn == config.SpawnFork {
		return newForkSpawner(env, ex)
	}
	return ex
}
