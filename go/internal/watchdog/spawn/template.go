package spawn

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/afterburn-dev/afterburn/go/internal/watchdog/config"
	"github.com/afterburn-dev/afterburn/go/internal/watchdog/obs"
	"github.com/afterburn-dev/afterburn/go/internal/watchdog/wire"
	"github.com/afterburn-dev/afterburn/go/internal/watchdog/worker"
	"golang.org/x/sys/unix"
)

// templateProc is one life of the template of PROTOCOL.md §2.6: a process
// started as a worker is, with slot 0 and the control socket on fd 5, that
// initialises once and then forks every worker.
type templateProc struct {
	w    *worker.Worker // the process and its log pipes; its protocol pipes close after the handshake
	conn *net.UnixConn  // the watchdog's end of the control socket
	m    *obs.Metrics   // for the protocol errors it counts
	// answers carries the records read from the control socket while a fork
	// request is outstanding; anything else is a protocol error (§2.6).
	answers     chan []byte
	outstanding atomic.Bool
	// child: its workers stay its children (fork-child under
	// isolation=request, spawn_child.go); kids are those it holds.
	child bool
	// unasked: with child, its workers answer the handshake unasked
	// (capability unasked-handshake, §2.6): one write and one wake-up of
	// the worker fewer per fork.
	unasked bool
	kids    kids

	endOnce sync.Once
	dead    chan struct{}      // closed once the template must be replaced
	reason  wire.RestartReason // why, a §9.1 reason; "" at shutdown
	why     string             // the detail, for the log
}

// startTemplate execs the command as a template and waits for its handshake
// reply, bounded by init_timeout (§2.6, §3.5). The reply may lack fork: the
// caller then keeps the process as an ordinary worker.
func startTemplate(cfg *config.Config, log *obs.Logger, m *obs.Metrics, iso *Isolation, started func(*templateProc)) (*templateProc, error) {
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
	var root *isolated // §2.7: the root of its workers' temporary directories
	if iso != nil {
		root = &isolated{iso: iso}
	}
	w, err := StartWorker(cfg, 0, log, theirs, root)
	theirs.Close() // the template has its copy on fd 5
	if err != nil {
		c.Close()
		return nil, err
	}
	t := &templateProc{w: w, conn: c.(*net.UnixConn), m: m, answers: make(chan []byte, 1), dead: make(chan struct{})}
	started(t)
	log.Printf("template pid %d started (spawn=fork)", w.Pid)
	if ie := w.Handshake(w.Deadline, false, log); ie != nil {
		if ie.Violation {
			m.ProtocolErrors.WithLabelValues("handshake").Inc()
		}
		t.conn.Close()
		w.Kill()
		<-w.Exited
		w.ClosePipes()
		worker.WaitLogs(w)
		return t, &worker.InitError{Reason: ie.Reason, Violation: ie.Violation,
			Err: fmt.Errorf("template pid %d: %v (%s)", w.Pid, ie, w.ExitStatus())}
	}
	return t, nil
}

// serve watches a template that listed fork: its exit, the end of its control
// socket and what it sends there. The template closed fds 3 and 4 after its
// handshake (§2.6); the watchdog drops its ends of those pipes too.
func (t *templateProc) serve() {
	t.w.First().ClosePipes()
	t.Watch()
}

// Watch ends the template as crashed at its exit, and reads its control
// socket meanwhile.
func (t *templateProc) Watch() {
	go func() {
		<-t.w.Exited
		t.End(wire.ReasonCrashed, "exited: "+t.w.ExitStatus())
	}()
	go t.readControl()
}

// readControl reads the template's records. The end of the socket, or a
// record nobody asked for, ends the template (§2.6).
func (t *templateProc) readControl() {
	buf := make([]byte, wire.ControlMax+1)
	oob := make([]byte, unix.CmsgSpace(4*4))
	for {
		n, oobn, flags, _, err := t.conn.ReadMsgUnix(buf, oob)
		switch {
		case errors.Is(err, net.ErrClosed):
			t.End("", "control socket closed")
			return
		case err != nil || (n == 0 && oobn == 0):
			// The template's end: EOF, or ECONNRESET when it was killed with a
			// record unread. Its exit, if it comes, is the reason (exitGrace):
			// a dying process closes its descriptors before it is reaped.
			why := "control socket closed by the template"
			if err != nil && !errors.Is(err, io.EOF) {
				why = fmt.Sprintf("control socket: %v", err)
			}
			if !t.w.AwaitExit() {
				t.End(wire.ReasonWorkerClosed, why)
			}
			return
		case oobn > 0 || flags&(unix.MSG_TRUNC|unix.MSG_CTRUNC) != 0:
			closeRights(oob[:oobn])
			t.violation(fmt.Sprintf("control record with descriptors or over %d bytes", wire.ControlMax))
			return
		case t.child && isExitRecord(buf[:n]):
			// §2.6: a fork-child template reports its workers' exits at any time.
			if err := t.exitReported(buf[:n]); err != nil {
				t.violation(err.Error())
				return
			}
			continue
		case !t.outstanding.Load():
			t.violation(fmt.Sprintf("unsolicited control record %q", buf[:n]))
			return
		}
		if a, err := wire.ParseForkAnswer(buf[:n]); t.child && err == nil && a.Pid > 0 {
			t.addKid(a.Pid) // before its exit report, which may come next
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
	t.m.ProtocolErrors.WithLabelValues("handshake").Inc()
	t.End(wire.ReasonBadResponse, why)
}

// End marks the template for replacement (the first reason wins) and kills
// it; reason "" is shutdown, which closes the control socket instead and
// lets the template exit 0 (§2.6, §9.4).
func (t *templateProc) End(reason wire.RestartReason, why string) {
	t.endOnce.Do(func() {
		t.reason, t.why = reason, why
		close(t.dead)
	})
	if reason != "" {
		t.w.Kill()
	}
	t.conn.Close()
}

// shutdown closes the control socket and waits for the template to exit,
// killing it after grace.
func (t *templateProc) shutdown(grace time.Duration) {
	t.End("", "shutdown")
	timer := time.NewTimer(grace)
	defer timer.Stop()
	select {
	case <-t.w.Exited:
	case <-timer.C:
		t.w.Kill()
		<-t.w.Exited
	}
}

// Run keeps a template running for the pool's life (§2.6): it restarts one
// that exits, closes its control socket, stops answering or breaks the
// protocol, with the backoff of §9.1, while forked workers keep serving.
func (f *forkSpawner) Run() {
	p := f.env
	defer p.WG.Done()
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
		t, err := startTemplate(p.Cfg, p.Log, p.M, p.Iso, func(t *templateProc) {
			f.setState("starting", t, false)
			select {
			case <-p.Stop: // close came before the template was known
				t.w.Kill()
			default:
			}
		})
		if p.isClosing() {
			if err == nil {
				t.shutdown(p.Cfg.ShutdownTimeout)
				t.w.ClosePipes()
				worker.WaitLogs(t.w)
			}
			return
		}
		if err != nil {
			reason := wire.ReasonInitFailed
			var ie *worker.InitError
			if errors.As(err, &ie) {
				reason = ie.Reason
			}
			failures++
			p.M.TemplateRestarted(reason)
			d := BackoffAfter(failures)
			p.Log.Warnf("template %s: %v; slots start the exec way; restarting it in %v", reason, err, d)
			if failures == CrashLoopAfter {
				p.Log.Errorf("template is crash-looping: %d consecutive initialisation failures", failures)
			}
			f.setState("backoff", nil, false)
			firstDone()
			if !p.sleep(d) {
				return
			}
			continue
		}
		if !t.w.Forkable && p.Iso != nil {
			// §2.7: isolation=request is a fork per request or nothing.
			p.Log.Errorf("template pid %d: the library cannot fork (its handshake reply does not list fork), which isolation=request needs (§2.7): stopping", t.w.Pid)
			t.conn.Close()
			t.w.Kill()
			<-t.w.Exited
			t.w.ClosePipes()
			f.setState("none", nil, false)
			firstDone()
			p.Fatal(errors.New("watchdog: isolation=request needs a library that can fork (§2.6, §2.7); the worker command's library does not list fork in its handshake reply"))
			return
		}
		if !t.w.Forkable {
			// §2.6: not a template; the process is slot 1's worker.
			p.Log.Warnf("template pid %d: the library cannot fork (its handshake reply does not list fork): it serves as w1's worker, and every worker is started the exec way (spawn=fork behaves as spawn=exec)", t.w.Pid)
			t.conn.Close()
			f.mu.Lock()
			f.current, f.ready, f.state, f.adopted = nil, false, "none", t.w
			f.mu.Unlock()
			firstDone()
			<-p.Stop
			f.mu.Lock()
			w := f.adopted // not taken by slot 1: shutdown came first
			f.adopted = nil
			f.mu.Unlock()
			if w != nil {
				w.Kill()
				<-w.Exited
				w.ClosePipes()
			}
			return
		}
		failures = 0
		t.child = p.Iso != nil && t.w.ForkChild // §2.6: the single fork is isolation's
		t.unasked = t.child && t.w.ForkUnasked
		t.serve()
		f.setState("ready", t, true)
		how := "workers are forked from it"
		if t.child {
			how = "workers are forked from it once and stay its children (fork-child)"
		}
		p.Log.Printf("template pid %d ready in %v: %s", t.w.Pid, time.Since(t.w.Started).Round(time.Millisecond), how)
		firstDone()
		select {
		case <-t.dead:
		case <-p.Stop:
		}
		f.setState("backoff", nil, false)
		if p.isClosing() {
			if t.child && !t.awaitKids(p.Cfg.ShutdownTimeout+time.Second) {
				p.Log.Warnf("template pid %d: %d worker(s) not reaped at shutdown; they end with it", t.w.Pid, t.liveKids())
			}
			t.shutdown(p.Cfg.ShutdownTimeout)
			t.w.ClosePipes()
			worker.WaitLogs(t.w)
			p.Log.Printf("template pid %d stopped: %s", t.w.Pid, t.w.ExitStatus())
			return
		}
		t.w.Kill()
		<-t.w.Exited
		t.w.ClosePipes()
		worker.WaitLogs(t.w)
		reason := t.reason
		if reason == "" {
			reason = wire.ReasonWorkerClosed
		}
		p.M.TemplateRestarted(reason)
		serveOn := "forked workers serve on"
		if t.child {
			serveOn = "its workers ended with it (fork-child)"
		}
		p.Log.Warnf("template pid %d replaced: %s (%s; %s); %s, restarting it in %v", t.w.Pid, reason, t.why, t.w.ExitStatus(), serveOn, backoffFirst)
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
	f.env.Changed() // after f.mu: closeLocked takes f.mu under the pool's mu
}
