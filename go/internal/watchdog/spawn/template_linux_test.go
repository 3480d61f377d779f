package spawn

import (
	"net"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/afterburn-dev/afterburn/go/internal/watchdog/worker"
	"golang.org/x/sys/unix"
)

// TestTemplateResetBeforeExitIsCrash: a template killed with a fork request
// unread resets its control socket (ECONNRESET) a moment before its exit is
// reaped. The restart reason is its exit, crashed (§2.6, §9.1), not
// worker_closed: the conformance check fork-template-crash saw the latter.
func TestTemplateResetBeforeExitIsCrash(t *testing.T) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	f := os.NewFile(uintptr(fds[0]), "control")
	fc, err := net.FileConn(f)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	conn := fc.(*net.UnixConn)

	// The template: a process of its own group, which the test kills.
	cmd := exec.Command("sleep", "60")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w := &worker.Worker{Pid: cmd.Process.Pid, Exited: make(chan struct{})}
	tp := &templateProc{w: w, conn: conn, answers: make(chan []byte, 1), dead: make(chan struct{})}

	// A fork request the template never reads, then its end closes.
	if _, err := conn.Write([]byte("fork 1")); err != nil {
		t.Fatal(err)
	}
	unix.Close(fds[1])
	tp.Watch()
	// Its exit is reaped a moment later (well within exitGrace).
	time.Sleep(worker.ExitGrace / 5)
	cmd.Process.Kill()
	err = cmd.Wait()
	w.Mu.Lock()
	w.Dead, w.ExitErr = true, err
	w.Mu.Unlock()
	close(w.Exited)

	select {
	case <-tp.dead:
	case <-time.After(5 * time.Second):
		t.Fatal("the template was never ended")
	}
	if tp.reason != "crashed" {
		t.Fatalf("reason %q (%s); want crashed: the reset came from a template that died", tp.reason, tp.why)
	}
}
