package watchdog

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// templateProc is one life of the template of PROTOCOL.md §2.6: a process
// started as a worker is, with slot 0 and the control socket on fd 5, that
// initialises once and then forks every worker.
type templateProc struct {
	w    *worker       // the process and its log pipes; its protocol pipes close after the handshake
	conn *net.UnixConn // the watchdog's end of the control socket
	m    *metrics      // for the protocol errors it counts
	// answers carries the records read from the control socket while a fork
	// request is outstanding; anything else is a protocol error (§2.6).
	answers     chan []byte
	outstanding atomic.Bool

	endOnce sync.Once
	dead    chan struct{} // closed once the template must be replaced
	reason  restartReason // why, a §9.1 reason; "" at shutdown
	why     string        // the detail, for the log
}

// startTemplate execs the command as a template and waits for its handshake
// reply, bounded by init_timeout (§2.6, §3.5). The reply may lack fork: the
// caller then keeps the process as an ordinary worker.
func startTemplate(cfg *Config, log *logger, m *metrics, started func(*templateProc)) (*templateProc, error) {
	pair, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("watchdog: control socket: %v", err)
	}
	ours := os.NewFile(uintptr(pair[0]), "control")
	theirs := os.NewFile(uintptr(pair[1]), "control (template's end)")
	c, err := net.FileConn(ours) // a dup, non-blocking, with deadlines
	ours.Close()
	if err != nil {
		theirs.Close()
		return nil, fmt.Errorf("watchdog: control socket: %v", err)
	}
	w, err := startWorker(cfg, 0, log, theirs, nil)
	theirs.Close() // the template has its copy on fd 5
	if err != nil {
		c.Close()
		return nil, err
	}
	t := &templateProc{w: w, conn: c.(*net.UnixConn), m: m, answers: make(chan []byte, 1), dead: make(chan struct{})}
	started(t)
	log.printf("template pid %d started (spawn=fork)", w.pid)
	if ie := w.handshake(w.deadline, false, log); ie != nil {
		if ie.violation {
			m.protocolErrors.WithLabelValues("handshake").Inc()
		}
		t.conn.Close()
		w.kill()
		<-w.exited
		w.closePipes()
		waitLogs(w)
		return t, &initError{reason: ie.reason, violation: ie.violation,
			err: fmt.Errorf("template pid %d: %v (%s)", w.pid, ie, w.exitStatus())}
	}
	return t, nil
}

// serve watches a template that listed fork: its exit, the end of its control
// socket and what it sends there. The template closed fds 3 and 4 after its
// handshake (§2.6); the watchdog drops its ends of those pipes too.
func (t *templateProc) serve() {
	t.w.first().closePipes()
	t.watch()
}

// watch ends the template as crashed at its exit, and reads its control
// socket meanwhile.
func (t *templateProc) watch() {
	go func() {
		<-t.w.exited
		t.end(reasonCrashed, "exited: "+t.w.exitStatus())
	}()
	go t.readControl()
}

// readControl reads the template's records. The end of the socket, or a
// record nobody asked for, ends the template (§2.6).
func (t *templateProc) readControl() {
	buf := make([]byte, controlMax+1)
	oob := make([]byte, unix.CmsgSpace(4*4))
	for {
		n, oobn, flags, _, err := t.conn.ReadMsgUnix(buf, oob)
		switch {
		case errors.Is(err, net.ErrClosed):
			t.end("", "control socket closed")
			return
		case err != nil || (n == 0 && oobn == 0):
			// The template's end: EOF, or ECONNRESET when it was killed with a
			// record unread. Its exit, if it comes, is the reason (exitGrace):
			// a dying process closes its descriptors before it is reaped.
			why := "control socket closed by the template"
			if err != nil && !errors.Is(err, io.EOF) {
				why = fmt.Sprintf("control socket: %v", err)
			}
			if !t.w.awaitExit() {
				t.end(reasonWorkerClosed, why)
			}
			return
		case oobn > 0 || flags&(unix.MSG_TRUNC|unix.MSG_CTRUNC) != 0:
			closeRights(oob[:oobn])
			t.violation(fmt.Sprintf("control record with descriptors or over %d bytes", controlMax))
			return
		case !t.outstanding.Load():
			t.violation(fmt.Sprintf("unsolicited control record %q", buf[:n]))
			return
		}
		select {
		case t.answers <- append([]byte(nil), buf[:n]...):
		case <-t.dead:
			return
		}
	}
}

// closeRights closes descriptors a template sent where none belong.
func closeRights(oob []byte) {
	msgs, _ := unix.ParseSocketControlMessage(oob)
	for _, m := range msgs {
		fds, _ := unix.ParseUnixRights(&m)
		for _, fd := range fds {
			unix.Close(fd)
		}
	}
}

// violation ends the template for breaking the control protocol (§2.6):
// counted as a handshake protocol error.
func (t *templateProc) violation(why string) {
	t.m.protocolErrors.WithLabelValues("handshake").Inc()
	t.end(reasonBadResponse, why)
}

// end marks the template for replacement (the first reason wins) and kills
// it; reason "" is shutdown, which closes the control socket instead and
// lets the template exit 0 (§2.6, §9.4).
func (t *templateProc) end(reason restartReason, why string) {
	t.endOnce.Do(func() {
		t.reason, t.why = reason, why
		close(t.dead)
	})
	if reason != "" {
		t.w.kill()
	}
	t.conn.Close()
}

// shutdown closes the control socket and waits for the template to exit,
// killing it after grace.
func (t *templateProc) shutdown(grace time.Duration) {
	t.end("", "shutdown")
	timer := time.NewTimer(grace)
	defer timer.Stop()
	select {
	case <-t.w.exited:
	case <-timer.C:
		t.w.kill()
		<-t.w.exited
	}
}

// run keeps a template running for the pool's life (§2.6): it restarts one
// that exits, closes its control socket, stops answering or breaks the
// protocol, with the backoff of §9.1, while forked workers keep serving.
func (f *forkSpawner) run() {
	p := f.env
	defer p.wg.Done()
	defer f.release()
	firstDone := func() {
		select {
		case <-f.first:
		default:
			close(f.first)
		}
	}
	defer firstDone()
	failures := 0 // consecutive initialisation failures
	for {
		f.setState("starting", nil, false)
		t, err := startTemplate(p.cfg, p.log, p.m, func(t *templateProc) {
			f.setState("starting", t, false)
			select {
			case <-p.stop: // close came before the template was known
				t.w.kill()
			default:
			}
		})
		if p.isClosing() {
			if err == nil {
				t.shutdown(p.cfg.ShutdownTimeout)
				t.w.closePipes()
				waitLogs(t.w)
			}
			return
		}
		if err != nil {
			reason := reasonInitFailed
			var ie *initError
			if errors.As(err, &ie) {
				reason = ie.reason
			}
			failures++
			p.m.templateRestarted(reason)
			d := backoffAfter(failures)
			p.log.warnf("template %s: %v; slots start the exec way; restarting it in %v", reason, err, d)
			if failures == crashLoopAfter {
				p.log.errorf("template is crash-looping: %d consecutive initialisation failures", failures)
			}
			f.setState("backoff", nil, false)
			firstDone()
			if !p.sleep(d) {
				return
			}
			continue
		}
		if !t.w.forkable && p.iso != nil {
			// §2.7: isolation=request is a fork per request or nothing.
			p.log.errorf("template pid %d: the library cannot fork (its handshake reply does not list fork), which isolation=request needs (§2.7): stopping", t.w.pid)
			t.conn.Close()
			t.w.kill()
			<-t.w.exited
			t.w.closePipes()
			f.setState("none", nil, false)
			firstDone()
			p.fatal(errors.New("watchdog: isolation=request needs a library that can fork (§2.6, §2.7); the worker command's library does not list fork in its handshake reply"))
			return
		}
		if !t.w.forkable {
			// §2.6: not a template; the process is slot 1's worker.
			p.log.warnf("template pid %d: the library cannot fork (its handshake reply does not list fork): it serves as w1's worker, and every worker is started the exec way (spawn=fork behaves as spawn=exec)", t.w.pid)
			t.conn.Close()
			f.mu.Lock()
			f.current, f.ready, f.state, f.adopted = nil, false, "none", t.w
			f.mu.Unlock()
			firstDone()
			<-p.stop
			f.mu.Lock()
			w := f.adopted // not taken by slot 1: shutdown came first
			f.adopted = nil
			f.mu.Unlock()
			if w != nil {
				w.kill()
				<-w.exited
				w.closePipes()
			}
			return
		}
		failures = 0
		t.serve()
		f.setState("ready", t, true)
		p.log.printf("template pid %d ready in %v: workers are forked from it", t.w.pid, time.Since(t.w.started).Round(time.Millisecond))
		firstDone()
		select {
		case <-t.dead:
		case <-p.stop:
		}
		f.setState("backoff", nil, false)
		if p.isClosing() {
			t.shutdown(p.cfg.ShutdownTimeout)
			t.w.closePipes()
			waitLogs(t.w)
			p.log.printf("template pid %d stopped: %s", t.w.pid, t.w.exitStatus())
			return
		}
		t.w.kill()
		<-t.w.exited
		t.w.closePipes()
		waitLogs(t.w)
		reason := t.reason
		if reason == "" {
			reason = reasonWorkerClosed
		}
		p.m.templateRestarted(reason)
		p.log.warnf("template pid %d replaced: %s (%s; %s); forked workers serve on, restarting it in %v", t.w.pid, reason, t.why, t.w.exitStatus(), backoffFirst)
		if !p.sleep(backoffFirst) {
			return
		}
	}
}

// setState records the template of this life and its state for /_/ready.
func (f *forkSpawner) setState(state string, t *templateProc, ready bool) {
	f.mu.Lock()
	f.state, f.current, f.ready = state, t, ready
	if ready {
		clear(f.failedForks) // a new template: forks get another chance
	}
	f.mu.Unlock()
	f.env.changed() // after f.mu: closeLocked takes f.mu under the pool's mu
}
