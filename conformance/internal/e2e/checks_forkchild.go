package e2e

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// The failure cases of the single fork (§2.6, "Workers that stay the template's children",
// capability fork-child) under isolation=request: the template killed with workers alive, and
// the pid of an exited worker held until the watchdog's word; the third, a worker that forks
// and exits, is a leftover check of §2.7 (isolationWorkerForksAndExits, checks_isolation.go).
// With a library that lists only fork, the first checks the double fork the same way, and the
// second is skipped.

// isolationTemplateKilled: §2.6 — the template is killed while its spares are alive: no spare
// is left running outside the watchdog's supervision nor as a zombie (a spare of the single
// fork dies with its template and is reaped by the watchdog; one of the double fork is the
// watchdog's child and serves on), the template is replaced, and requests are answered.
func isolationTemplateKilled(t *T) {
	isolatedPool(t, 2)
	_, st := t.ReadyStatus()
	tpl := st.TemplatePid
	if tpl == 0 {
		t.Fatalf("/_/ready names no template_pid under isolation=request (§9.2)")
	}
	spares := t.Workers()
	if len(spares) != 2 {
		t.Fatalf("spares %v; want 2 forked spares, children of the template or of the watchdog", spares)
	}
	before := t.Metric("afterburn_template_restarts_total", "reason", "crashed")
	syscall.Kill(tpl, syscall.SIGKILL)
	t.WaitMetric(before+1, "afterburn_template_restarts_total", "reason", "crashed")
	for _, pid := range spares {
		t.Eventually(fmt.Sprintf("spare pid %d gone, or still supervised by the watchdog", pid), func() (bool, string) {
			f, err := procStat(pid)
			if err != nil {
				return true, "" // gone: reaped
			}
			return f[0] != "Z" && f[1] == strconv.Itoa(t.WD.Pid()), fmt.Sprintf("state %s, parent %s (template %d, watchdog %d)", f[0], f[1], tpl, t.WD.Pid())
		})
	}
	t.Eventually("a new template ready", func() (bool, string) {
		_, st := t.ReadyStatus()
		return st != nil && st.Template == "ready" && st.TemplatePid != tpl, fmt.Sprintf("%+v", st)
	})
	echoesOwnIDs(t, 3)
}

// forkChildPidHeld: §2.6 "Reap, and pid reuse" — the suite drives the library's template as
// the watchdog does: a worker of the single fork that exits is reported, stays a zombie (its
// pid and group id not reusable) until `reap <pid>`, and is reaped then.
func forkChildPidHeld(t *T) {
	tp := startTemplate(t)
	w := tp.forkChild(t, 1, false)
	if p := ppid(w.pid); p != tp.cmd.Process.Pid {
		t.Fatalf("worker pid %d has parent %d; want the template %d (§2.6: one fork)", w.pid, p, tp.cmd.Process.Pid)
	}
	// §2.7: it made its temporary directory in the root, after its pid, and names it.
	head := w.handshake(t)
	dir := headField(head, "AfterBurn-Tmpdir")
	if filepath.Dir(dir) != tp.root || !strings.HasPrefix(filepath.Base(dir), strconv.Itoa(w.pid)+"-") {
		t.Fatalf("worker pid %d named AfterBurn-Tmpdir %q in its handshake reply %q; want %s/%d-... (§2.7)", w.pid, dir, head, tp.root, w.pid)
	}
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 {
		t.Fatalf("worker pid %d's temporary directory %s: %v; want a directory of mode 0700 (§2.7)", w.pid, dir, err)
	}
	w.req.Close() // EOF after its (no) exchange: it exits (§9.4)
	rec := tp.record(t)
	if want := fmt.Sprintf("exited %d exit 0\n", w.pid); rec != want {
		t.Fatalf("the template sent %q; want %q", rec, want)
	}
	for range 2 {
		if f, err := procStat(w.pid); err != nil || f[0] != "Z" || f[1] != strconv.Itoa(tp.cmd.Process.Pid) {
			t.Fatalf("pid %d after its exit report: %v %v; want a zombie of the template until the watchdog says reap (§2.6)", w.pid, f, err)
		}
		time.Sleep(100 * time.Millisecond) // a template that reaps on its own does so by now
	}
	tp.send(t, fmt.Sprintf("reap %d\n", w.pid), nil)
	t.Eventually(fmt.Sprintf("pid %d reaped after reap", w.pid), func() (bool, string) {
		_, err := procStat(w.pid)
		return err != nil, "still in /proc"
	})
	// A reap of a pid it did not report is a protocol error: it exits non-zero.
	tp.send(t, fmt.Sprintf("reap %d\n", w.pid), nil)
	if err := tp.wait(t); err == nil {
		t.Fatalf("the template exited 0 after a reap of a pid it had not reported; want non-zero (§2.6)\n%s", tp.log.String())
	}
}

// forkChildUnasked: §2.6 "The handshake, unasked" — a template that lists
// unasked-handshake, sent `fork-child <slot> unasked`, has its worker write its handshake
// reply, its AfterBurn-Tmpdir named (§2.7), with no handshake request written to it; the
// worker then serves a request, and exits at EOF.
func forkChildUnasked(t *T) {
	tp := startTemplate(t)
	caps := strings.Split(headField(tp.head, "AfterBurn-Capabilities"), ",")
	listed := false
	for _, c := range caps {
		listed = listed || strings.Trim(c, " \t") == "unasked-handshake"
	}
	if !listed {
		t.Skipf("the library does not list unasked-handshake (§2.6): the watchdog asks for every handshake; reply %q", tp.head)
	}
	w := tp.forkChild(t, 1, true)
	head := readHead(t, w.resp) // nothing was written to it
	if !strings.HasPrefix(head, "HTTP/1.1 200 ") || headField(head, "AfterBurn-Protocol") != "1" {
		t.Fatalf("worker pid %d, forked unasked, wrote %q; want its handshake reply: 200, AfterBurn-Protocol 1 (§3.2)", w.pid, head)
	}
	if dir := headField(head, "AfterBurn-Tmpdir"); filepath.Dir(dir) != tp.root || !strings.HasPrefix(filepath.Base(dir), strconv.Itoa(w.pid)+"-") {
		t.Fatalf("worker pid %d named AfterBurn-Tmpdir %q in its unasked reply %q; want %s/%d-... (§2.7)", w.pid, dir, head, tp.root, w.pid)
	}
	w.req.Write([]byte("GET /whoami HTTP/1.1\r\nHost: fn\r\nContent-Length: 0\r\n\r\n"))
	if got := readHead(t, w.resp); !strings.HasPrefix(got, "HTTP/1.1 200 ") {
		t.Fatalf("worker pid %d answered GET /whoami after its unasked reply with %q; want 200", w.pid, got)
	}
	w.req.Close()
	if rec, want := tp.record(t), fmt.Sprintf("exited %d exit 0\n", w.pid); rec != want {
		t.Fatalf("the template sent %q; want %q\n%s", rec, want, tp.log.String())
	}
	tp.send(t, fmt.Sprintf("reap %d\n", w.pid), nil)
}

// templateProc is the library started as a template by the suite itself (§2.6).
type templateProc struct {
	cmd  *exec.Cmd
	ctl  *net.UnixConn
	log  *bytes.Buffer
	done chan error
	root string // AFTERBURN_TMPDIR_ROOT: where its workers make their temporary directories (§2.7)
	head string // its handshake reply
}

type forkedWorker struct {
	pid       int
	req, resp *os.File
}

const handshakeBytes = "OPTIONS * HTTP/1.1\r\nHost: afterburn\r\nAfterBurn-Handshake: 1\r\nContent-Length: 0\r\n\r\n"

func startTemplate(t *T) *templateProc {
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_SEQPACKET|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatalf("socketpair: %v", err)
	}
	ours, theirs := os.NewFile(uintptr(fds[0]), "control"), os.NewFile(uintptr(fds[1]), "control (template)")
	c, err := net.FileConn(ours)
	ours.Close()
	if err != nil {
		t.Fatalf("control socket: %v", err)
	}
	reqR, reqW := pipe(t)
	respR, respW := pipe(t)
	root, err := os.MkdirTemp("", "afterburn-conformance-root-")
	if err != nil {
		t.Fatalf("%v", err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	tp := &templateProc{ctl: c.(*net.UnixConn), log: &bytes.Buffer{}, done: make(chan error, 1), root: root}
	tp.cmd = exec.CommandContext(t.ctx, "/bin/sh", "-c", "exec "+t.cfg.Function)
	tp.cmd.ExtraFiles = []*os.File{reqR, respW, theirs}
	tp.cmd.Stdout, tp.cmd.Stderr = tp.log, tp.log
	tp.cmd.Env = append(os.Environ(), "AFTERBURN_PROTOCOL=1", "AFTERBURN_FDS=3,4", "AFTERBURN_WORKER_ID=0",
		"AFTERBURN_CONTROL_FD=5", "AFTERBURN_ISOLATION=request", "AFTERBURN_TMPDIR_ROOT="+root)
	tp.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := tp.cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", t.cfg.Function, err)
	}
	reqR.Close()
	respW.Close()
	theirs.Close()
	go func() { tp.done <- tp.cmd.Wait() }()
	t.Cleanup(func() {
		tp.ctl.Close()
		syscall.Kill(-tp.cmd.Process.Pid, syscall.SIGKILL)
		<-tp.done
		reqW.Close()
		respR.Close()
	})
	reqW.Write([]byte(handshakeBytes))
	head := readHead(t, respR)
	tp.head = head
	if !strings.Contains(head, "fork-child") {
		t.Skipf("the library does not list fork-child (§2.6): the watchdog uses the double fork; reply %q", head)
	}
	return tp
}

func pipe(t *T) (*os.File, *os.File) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatalf("pipe: %v", err)
	}
	return r, w
}

// readHead reads a response head (the handshake reply has no body, §3.2).
func readHead(t *T, f *os.File) string {
	f.SetReadDeadline(time.Now().Add(10 * time.Second))
	var b []byte
	buf := make([]byte, 1)
	for !bytes.HasSuffix(b, []byte("\r\n\r\n")) {
		if _, err := f.Read(buf); err != nil {
			t.Fatalf("reading a handshake reply: %v (got %q)", err, b)
		}
		b = append(b, buf[0])
	}
	return string(b)
}

// headField is the value of the field name in a response head, "" when absent.
func headField(head, name string) string {
	for _, line := range strings.Split(head, "\r\n")[1:] {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.EqualFold(k, name) {
			return strings.Trim(v, " \t")
		}
	}
	return ""
}

func (tp *templateProc) send(t *T, text string, fds []int) {
	if _, _, err := tp.ctl.WriteMsgUnix([]byte(text), syscall.UnixRights(fds...), nil); err != nil && fds != nil {
		t.Fatalf("sending %q: %v", text, err)
	}
}

func (tp *templateProc) record(t *T) string {
	tp.ctl.SetReadDeadline(time.Now().Add(10 * time.Second))
	buf := make([]byte, 600)
	n, err := tp.ctl.Read(buf)
	if err != nil {
		t.Fatalf("reading the control socket: %v\ntemplate's output:\n%s", err, tp.log.String())
	}
	return string(buf[:n])
}

// forkChild sends `fork-child <slot>`, or with unasked `fork-child <slot> unasked`, with the
// worker's four pipes and reads the answer.
func (tp *templateProc) forkChild(t *T, slot int, unasked bool) *forkedWorker {
	reqR, reqW := pipe(t)
	respR, respW := pipe(t)
	_, outW := pipe(t)
	_, errW := pipe(t)
	request := fmt.Sprintf("fork-child %d\n", slot)
	if unasked {
		request = fmt.Sprintf("fork-child %d unasked\n", slot)
	}
	tp.send(t, request, []int{int(reqR.Fd()), int(respW.Fd()), int(outW.Fd()), int(errW.Fd())})
	for _, f := range []*os.File{reqR, respW, outW, errW} {
		f.Close()
	}
	rec := tp.record(t)
	var s, pid int
	if _, err := fmt.Sscanf(rec, "forked %d %d\n", &s, &pid); err != nil || s != slot {
		t.Fatalf("fork-child %d answered %q; want forked %d <pid>\ntemplate's output:\n%s", slot, rec, slot, tp.log.String())
	}
	w := &forkedWorker{pid: pid, req: reqW, resp: respR}
	t.Cleanup(func() { reqW.Close(); respR.Close(); syscall.Kill(pid, syscall.SIGKILL) })
	return w
}

func (w *forkedWorker) handshake(t *T) string {
	w.req.Write([]byte(handshakeBytes))
	head := readHead(t, w.resp)
	if !strings.HasPrefix(head, "HTTP/1.1 200 ") {
		t.Fatalf("worker pid %d answered its handshake %q", w.pid, head)
	}
	return head
}

func (tp *templateProc) wait(t *T) error {
	select {
	case err := <-tp.done:
		tp.done <- err
		return err
	case <-time.After(10 * time.Second):
		t.Fatalf("the template did not exit\n%s", tp.log.String())
		return nil
	}
}

func ppid(pid int) int {
	f, err := procStat(pid)
	if err != nil || len(f) < 2 {
		return 0
	}
	p, _ := strconv.Atoi(f[1])
	return p
}
