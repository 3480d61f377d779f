package spawn

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/afterburn-dev/afterburn/go/internal/watchdog/proc"
	"github.com/afterburn-dev/afterburn/go/internal/watchdog/wire"
	"github.com/afterburn-dev/afterburn/go/internal/watchdog/worker"
	"golang.org/x/sys/unix"
)

// forkFallbackAfter is how many consecutive failed forks send a slot the
// exec way (PROTOCOL.md §2.6).
const forkFallbackAfter = 3

// forkSpawner is spawn=fork (PROTOCOL.md §2.6): one template initialises
// once, and every worker is a fork of it, handed its four pipes over the
// control socket. Whenever no template is ready, or a slot's forks keep
// failing, a worker is started the exec way instead.
type forkSpawner struct {
	env     *Env
	exec    *execSpawner
	release func() // the orphan reaper's

	forkMu sync.Mutex // PROTOCOL.md §2.6: one fork request at a time
	iso    *Isolation // isolation=request (§2.7); nil otherwise

	mu          sync.Mutex
	current     *templateProc  // the template of this life, ready or not
	ready       bool           // current answered its handshake listing fork
	state       string         // for /_/ready: starting, ready, backoff, none
	adopted     *worker.Worker // a template that cannot fork, kept as slot 1's worker
	failedForks map[int]int    // consecutive failed forks, by slot
	first       chan struct{}  // closed once the first template is ready or has failed
}

func newForkSpawner(p *Env, ex *execSpawner) *forkSpawner {
	f := &forkSpawner{env: p, exec: ex, iso: p.Iso, state: "starting", failedForks: map[int]int{}, first: make(chan struct{})}
	// The middle process exits at once, so a forked worker is re-parented:
	// to the watchdog, as a subreaper, whose reaper then must run (§2.6).
	if err := proc.BecomeSubreaper(); err != nil {
		p.Log.Warnf("could not become a child subreaper: %v; forked workers will not be the watchdog's children", err)
	}
	f.release = proc.StartReaper()
	p.WG.Add(1)
	go f.Run()
	return f
}

// Start forks slot's worker from the template, or execs it when there is no
// ready template or the slot's forks keep failing (§2.6). Workers started
// with the pool wait for the first template's handshake: otherwise all of
// them would be exec'd while it initialises.
func (f *forkSpawner) Start(slot int) (*worker.Worker, error) {
	select {
	case <-f.first:
	case <-f.env.Stop:
		return nil, errors.New("watchdog: shutting down")
	}
	f.mu.Lock()
	if w := f.adopted; w != nil && slot == 1 {
		f.adopted = nil
		f.mu.Unlock()
		w.ID = slot
		w.Deadline = time.Now().Add(f.env.Cfg.InitTimeout)
		f.env.M.WorkerStarts.WithLabelValues("exec").Inc()
		return w, nil // it answers its handshake once more, as a worker
	}
	t, failed := f.current, f.failedForks[slot]
	if !f.ready {
		t = nil
	}
	noTemplate := f.state == "none"
	f.mu.Unlock()
	switch {
	case noTemplate && f.iso != nil:
		return nil, &worker.InitError{Reason: wire.ReasonInitFailed, Err: errors.New("isolation=request: the library cannot fork (§2.7)")}
	case noTemplate:
		return f.exec.Start(slot) // the library cannot fork: logged once
	case t == nil:
		f.env.Log.Warnf("w%d: no template ready: starting it the exec way", slot)
		return f.exec.Start(slot)
	case failed >= forkFallbackAfter:
		f.env.Log.Warnf("w%d: %d consecutive failed forks: starting it the exec way", slot, failed)
		return f.exec.Start(slot)
	}
	w, err := f.fork(t, slot)
	if err != nil {
		f.forkFailed(slot, err)
	}
	return w, err
}

// fork sends one fork request and waits for its answer (§2.6).
func (f *forkSpawner) fork(t *templateProc, slot int) (*worker.Worker, error) {
	f.forkMu.Lock()
	defer f.forkMu.Unlock()
	cfg := f.env.Cfg
	pipes, err := newForkPipes()
	if err != nil {
		return nil, err
	}
	reqW, reqR, respR, outR, errR := pipes.reqW, pipes.reqR, pipes.respR, pipes.outR, pipes.errR
	proc.GrowPipe(reqW)
	proc.GrowPipe(respR)                     // a pipe's size is set through either end
	w := worker.New(slot, reqW, reqR, respR) // reqR stays: worker.unreadRequestBytes
	w.Kind = "fork"
	w.Started = time.Now()
	w.Deadline = w.Started.Add(cfg.ForkTimeout)
	// §2.7: for the double fork made here and named in its request; a worker
	// of the single fork makes its own and names it in its handshake reply.
	var tmpdir string
	if f.iso != nil && !t.child {
		var err error
		if tmpdir, err = f.iso.newTempDir(slot); err != nil {
			pipes.closeTheirs()
			for _, file := range []*os.File{reqR, reqW, respR, outR, errR} {
				file.Close()
			}
			return nil, &worker.InitError{Reason: wire.ReasonInitFailed, Err: err}
		}
	}
	fail := func(ie *worker.InitError) (*worker.Worker, error) {
		for _, file := range []*os.File{reqR, reqW, respR, outR, errR} {
			file.Close()
		}
		if f.iso != nil {
			f.iso.removeTempDir(tmpdir)
		}
		return nil, ie
	}

	proc.Procs.Mu.Lock()
	proc.Procs.Forking++ // the reaper leaves unknown children alone from now on
	proc.Procs.Mu.Unlock()
	forking := true
	defer func() {
		if forking {
			proc.Procs.Mu.Lock()
			proc.Procs.Forking--
			proc.Procs.Mu.Unlock()
		}
	}()
	t.outstanding.Store(true)
	defer t.outstanding.Store(false)
	rights := unix.UnixRights(pipes.theirs[:]...)
	_, _, err = t.conn.WriteMsgUnix(forkRecord(t, slot, tmpdir), rights, nil)
	pipes.closeTheirs() // the template holds its copies now, or never will
	if err != nil {
		// A template that died is the reason, if its exit shows (exitGrace):
		// serve's watcher then ends it as crashed (§2.6).
		if !t.w.AwaitExit() {
			t.End(wire.ReasonWorkerClosed, fmt.Sprintf("sending a fork request: %v", err))
		}
		return fail(&worker.InitError{Reason: wire.ReasonInitFailed, Err: fmt.Errorf("fork request: %v", err)})
	}
	timer := time.NewTimer(cfg.ForkTimeout)
	defer timer.Stop()
	var record []byte
	select {
	case record = <-t.answers:
	case <-timer.C:
		t.End(wire.ReasonUnresponsive, fmt.Sprintf("no answer to fork %d within fork_timeout %v", slot, cfg.ForkTimeout))
		return fail(&worker.InitError{Reason: wire.ReasonInitTimeout, Err: fmt.Errorf("the template did not answer the fork request within fork_timeout %v", cfg.ForkTimeout)})
	case <-t.dead:
		return fail(&worker.InitError{Reason: wire.ReasonInitFailed, Err: fmt.Errorf("the template ended during the fork: %s", t.why)})
	case <-f.env.Stop:
		return fail(&worker.InitError{Reason: wire.ReasonInitFailed, Err: errors.New("shutting down")})
	}
	a, err := wire.ParseForkAnswer(record)
	if err == nil && a.Slot != slot {
		err = fmt.Errorf("answer %q is for slot %d, asked for %d", record, a.Slot, slot)
	}
	switch {
	case err != nil || a.Pid == 0:
	case t.child:
		if cerr := checkChildAnswer(t, a.Pid); cerr != nil {
			err = fmt.Errorf("answer %q: %v", record, cerr)
		}
	case !proc.IsChild(a.Pid):
		err = fmt.Errorf("answer %q names pid %d, which is not the watchdog's child", record, a.Pid)
	}
	if err != nil {
		t.violation(err.Error())
		return fail(&worker.InitError{Reason: wire.ReasonInitFailed, Violation: true, Err: fmt.Errorf("malformed fork answer: %v", err)})
	}
	if a.Pid == 0 {
		return fail(&worker.InitError{Reason: wire.ReasonInitFailed, Err: fmt.Errorf("the template could not fork: %s", a.Reason)})
	}
	proc.Procs.Mu.Lock()
	proc.Procs.Pids[a.Pid] = true
	proc.Procs.Forking--
	forking = false
	proc.Procs.Mu.Unlock()
	w.Pid = a.Pid
	if t.child {
		w.Exit = &childProc{t: t, pid: a.Pid, k: t.kid(a.Pid)}
		w.Unasked = t.unasked
	} else {
		process, _ := os.FindProcess(a.Pid) // Linux: a pidfd, so Wait cannot reap a reused pid
		w.Reap = process.Wait
	}
	if f.iso != nil {
		f.iso.Watch(w, tmpdir) // before wait reads them
	}
	w.ForwardLogs(f.env.Log, errR, outR)
	go w.Wait()
	f.env.M.WorkerStarts.WithLabelValues("fork").Inc()
	return w, nil
}

// Handshook ends a fork's accounting: its duration, from the request to the
// worker's handshake reply, or a failed fork (§2.6, §10.4).
func (f *forkSpawner) Handshook(w *worker.Worker, err error) {
	if w.Kind != "fork" {
		return
	}
	if err != nil {
		f.forkFailed(w.ID, err)
		return
	}
	f.env.M.ForkDuration.Observe(time.Since(w.Started).Seconds())
	f.mu.Lock()
	clear(f.failedForks) // a fork succeeded again: every slot forks again
	f.mu.Unlock()
}

func (f *forkSpawner) forkFailed(slot int, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failedForks[slot]++
	if f.failedForks[slot] == forkFallbackAfter {
		f.env.Log.Warnf("w%d: %d consecutive failed forks (last: %v): the slot is started the exec way until a fork succeeds", slot, forkFallbackAfter, err)
	}
}

func (f *forkSpawner) Template() (string, int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.current == nil || f.state == "none" || f.state == "backoff" {
		return f.state, 0
	}
	return f.state, f.current.w.Pid
}

// Close is called at shutdown with the pool's lock held: it only closes the
// control socket (the template exits 0 at its end) or kills a template still
// initialising; run waits for it.
func (f *forkSpawner) Close() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if t := f.current; t != nil {
		if !f.ready {
			t.w.Kill()
		}
		if t.child && f.ready {
			return // Run closes it once its workers are reaped (spawn_child.go)
		}
		t.conn.Close()
	}
}
