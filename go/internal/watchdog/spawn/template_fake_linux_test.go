package spawn

import (
	"net"
	"os"
	"os/exec"
	"syscall"
	"testing"

	"github.com/afterburn-dev/afterburn/go/internal/watchdog/obs"
	"github.com/afterburn-dev/afterburn/go/internal/watchdog/worker"
	"golang.org/x/sys/unix"
)

// fakeTemplate is a templateProc on a socketpair, the test holding the
// template's end; the template process itself is a sleep in a group of its
// own. child makes it a fork-child template (spawn_child.go), whose workers
// stay its children.
func fakeTemplate(t *testing.T, child bool) (*templateProc, *os.File, *exec.Cmd) {
	t.Helper()
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
	cmd := exec.Command("sleep", "60")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill() })
	w := &worker.Worker{Pid: cmd.Process.Pid, Exited: make(chan struct{})}
	tp := &templateProc{w: w, conn: fc.(*net.UnixConn), m: obs.NewMetrics(nil, nil), answers: make(chan []byte, 1), dead: make(chan struct{}), child: child}
	theirs := os.NewFile(uintptr(fds[1]), "control (template's end)")
	t.Cleanup(func() { theirs.Close(); tp.conn.Close() })
	return tp, theirs, cmd
}

// templateReaped kills the fake template and reaps it as its worker's Wait
// would: dead, with its exit status, and Exited closed.
func templateReaped(tp *templateProc, cmd *exec.Cmd) {
	cmd.Process.Kill()
	err := cmd.Wait()
	tp.w.Mu.Lock()
	tp.w.Dead, tp.w.ExitErr = true, err
	tp.w.Mu.Unlock()
	close(tp.w.Exited)
}

// templateDies ends the fake template as its watcher would: reaped, then dead.
func templateDies(tp *templateProc, cmd *exec.Cmd) {
	templateReaped(tp, cmd)
	tp.End("crashed", "killed by the test")
}
