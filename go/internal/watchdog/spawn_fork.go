package watchdog

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

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
	env     *spawnEnv
	exec    *execSpawner
	release func() // the orphan reaper's

	forkMu sync.Mutex // PROTOCOL.md §2.6: one fork request at a time
	iso    *isolation // isolation=request (§2.7); nil otherwise

	mu          sync.Mutex
	current     *templateProc // the template of this life, ready or not
	ready       bool          // current answered its handshake listing fork
	state       string        // for /_/ready: starting, ready, backoff, none
	adopted     *worker       // a template that cannot fork, kept as slot 1's worker
	failedForks map[int]int   // consecutive failed forks, by slot
	first       chan struct{} // closed once the first template is ready or has failed
}

func newForkSpawner(p *spawnEnv, ex *execSpawner) *forkSpawner {
	f := &forkSpawner{env: p, exec: ex, iso: p.iso, state: "starting", failedForks: map[int]int{}, first: make(chan struct{})}
	// The middle process exits at once, so a forked worker is re-parented:
	// to the watchdog, as a subreaper, whose reaper then must run (§2.6).
	if err := becomeSubreaper(); err != nil {
		p.log.warnf("could not become a child subreaper: %v; forked workers will not be the watchdog's children", err)
	}
	f.release = startReaper()
	p.wg.Add(1)
	go f.run()
	return f
}

// start forks slot's worker from the template, or execs it when there is no
// ready template or the slot's forks keep failing (§2.6). Workers started
// with the pool wait for the first template's handshake: otherwise all of
// them would be exec'd while it initialises.
func (f *forkSpawner) start(slot int) (*worker, error) {
	select {
	case <-f.first:
	case <-f.env.stop:
		return nil, errors.New("watchdog: shutting down")
	}
	f.mu.Lock()
	if w := f.adopted; w != nil && slot == 1 {
		f.adopted = nil
		f.mu.Unlock()
		w.id = slot
		w.deadline = time.Now().Add(f.env.cfg.InitTimeout)
		f.env.m.workerStarts.WithLabelValues("exec").Inc()
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
		return nil, &initError{reason: reasonInitFailed, err: errors.New("isolation=request: the library cannot fork (§2.7)")}
	case noTemplate:
		return f.exec.start(slot) // the library cannot fork: logged once
	case t == nil:
		f.env.log.warnf("w%d: no template ready: starting it the exec way", slot)
		return f.exec.start(slot)
	case failed >= forkFallbackAfter:
		f.env.log.warnf("w%d: %d consecutive failed forks: starting it the exec way", slot, failed)
		return f.exec.start(slot)
	}
	w, err := f.fork(t, slot)
	if err != nil {
		f.forkFailed(slot, err)
	}
	return w, err
}

// fork sends one fork request and waits for its answer (§2.6).
func (f *forkSpawner) fork(t *templateProc, slot int) (*worker, error) {
	f.forkMu.Lock()
	defer f.forkMu.Unlock()
	cfg := f.env.cfg
	var pipes [4][2]*os.File // request, response, stdout, stderr: read end, write end
	for i := range pipes {
		r, w, err := os.Pipe()
		if err != nil {
			for _, p := range pipes[:i] {
				p[0].Close()
				p[1].Close()
			}
			return nil, fmt.Errorf("watchdog: pipe: %v", err)
		}
		pipes[i] = [2]*os.File{r, w}
	}
	reqR, reqW := pipes[0][0], pipes[0][1]
	respR, respW := pipes[1][0], pipes[1][1]
	outR, outW := pipes[2][0], pipes[2][1]
	errR, errW := pipes[3][0], pipes[3][1]
	growPipe(reqW)
	growPipe(respW)
	w := newWorker(slot, reqW, reqR, respR) // reqR stays: worker.unreadRequestBytes
	w.kind = "fork"
	w.started = time.Now()
	w.deadline = w.started.Add(cfg.ForkTimeout)
	var tmpdir string // §2.7: made before the fork, named in its request
	if f.iso != nil {
		var err error
		if tmpdir, err = f.iso.newTempDir(slot); err != nil {
			for _, p := range pipes {
				p[0].Close()
				p[1].Close()
			}
			return nil, &initError{reason: reasonInitFailed, err: err}
		}
	}
	fail := func(ie *initError) (*worker, error) {
		for _, file := range []*os.File{reqR, reqW, respR, outR, errR} {
			file.Close()
		}
		if f.iso != nil {
			f.iso.removeTempDir(tmpdir)
		}
		return nil, ie
	}

	procs.mu.Lock()
	procs.forking++ // the reaper leaves unknown children alone from now on
	procs.mu.Unlock()
	forking := true
	defer func() {
		if forking {
			procs.mu.Lock()
			procs.forking--
			procs.mu.Unlock()
		}
	}()
	t.outstanding.Store(true)
	defer t.outstanding.Store(false)
	rights := unix.UnixRights(int(reqR.Fd()), int(respW.Fd()), int(outW.Fd()), int(errW.Fd()))
	_, _, err := t.conn.WriteMsgUnix(forkRequest(slot, tmpdir), rights, nil)
	respW.Close() // the template holds its copies now, or never will
	outW.Close()
	errW.Close()
	if err != nil {
		// A template that died is the reason, if its exit shows (exitGrace):
		// serve's watcher then ends it as crashed (§2.6).
		if !t.w.awaitExit() {
			t.end(reasonWorkerClosed, fmt.Sprintf("sending a fork request: %v", err))
		}
		return fail(&initError{reason: reasonInitFailed, err: fmt.Errorf("fork request: %v", err)})
	}
	timer := time.NewTimer(cfg.ForkTimeout)
	defer timer.Stop()
	var record []byte
	select {
	case record = <-t.answers:
	case <-timer.C:
		t.end(reasonUnresponsive, fmt.Sprintf("no answer to fork %d within fork_timeout %v", slot, cfg.ForkTimeout))
		return fail(&initError{reason: reasonInitTimeout, err: fmt.Errorf("the template did not answer the fork request within fork_timeout %v", cfg.ForkTimeout)})
	case <-t.dead:
		return fail(&initError{reason: reasonInitFailed, err: fmt.Errorf("the template ended during the fork: %s", t.why)})
	case <-f.env.stop:
		return fail(&initError{reason: reasonInitFailed, err: errors.New("shutting down")})
	}
	a, err := parseForkAnswer(record)
	if err == nil && a.slot != slot {
		err = fmt.Errorf("answer %q is for slot %d, asked for %d", record, a.slot, slot)
	}
	if err == nil && a.pid != 0 && !isChild(a.pid) {
		err = fmt.Errorf("answer %q names pid %d, which is not the watchdog's child", record, a.pid)
	}
	if err != nil {
		t.violation(err.Error())
		return fail(&initError{reason: reasonInitFailed, violation: true, err: fmt.Errorf("malformed fork answer: %v", err)})
	}
	if a.pid == 0 {
		return fail(&initError{reason: reasonInitFailed, err: fmt.Errorf("the template could not fork: %s", a.reason)})
	}
	proc, _ := os.FindProcess(a.pid) // Linux: a pidfd, so Wait cannot reap a reused pid
	procs.mu.Lock()
	procs.pids[a.pid] = true
	procs.forking--
	forking = false
	procs.mu.Unlock()
	w.pid = a.pid
	w.reap = proc.Wait
	if f.iso != nil {
		f.iso.watch(w, tmpdir) // before wait reads them
	}
	w.forwardLogs(f.env.log, errR, outR)
	go w.wait()
	f.env.m.workerStarts.WithLabelValues("fork").Inc()
	return w, nil
}

// handshook ends a fork's accounting: its duration, from the request to the
// worker's handshake reply, or a failed fork (§2.6, §10.4).
func (f *forkSpawner) handshook(w *worker, err error) {
	if w.kind != "fork" {
		return
	}
	if err != nil {
		f.forkFailed(w.id, err)
		return
	}
	f.env.m.forkDuration.Observe(time.Since(w.started).Seconds())
	f.mu.Lock()
	clear(f.failedForks) // a fork succeeded again: every slot forks again
	f.mu.Unlock()
}

func (f *forkSpawner) forkFailed(slot int, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failedForks[slot]++
	if f.failedForks[slot] == forkFallbackAfter {
		f.env.log.warnf("w%d: %d consecutive failed forks (last: %v): the slot is started the exec way until a fork succeeds", slot, forkFallbackAfter, err)
	}
}

func (f *forkSpawner) template() (string, int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.current == nil || f.state == "none" || f.state == "backoff" {
		return f.state, 0
	}
	return f.state, f.current.w.pid
}

// close is called at shutdown with the pool's lock held: it only closes the
// control socket (the template exits 0 at its end) or kills a template still
// initialising; run waits for it.
func (f *forkSpawner) close() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if t := f.current; t != nil {
		if !f.ready {
			t.w.kill()
		}
		t.conn.Close()
	}
}
