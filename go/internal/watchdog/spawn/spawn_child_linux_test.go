package spawn

import (
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/afterburn-dev/afterburn/go/internal/watchdog/worker"
	"golang.org/x/sys/unix"
)

// aWorker starts a process in a group of its own with a helper in that
// group, standing for a worker and what its request left: the test's child
// (as a fork-child worker is the template's), killed and left a zombie.
func aWorker(t *testing.T) (pid, helper int) {
	t.Helper()
	cmd := exec.Command("sh", "-c", "sleep 60 & echo $!; exec sleep 60")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); cmd.Wait() })
	buf := make([]byte, 32)
	n, _ := out.Read(buf)
	helper, err = strconv.Atoi(string(buf[:n-1]))
	if err != nil {
		t.Fatalf("helper pid %q: %v", buf[:n], err)
	}
	return cmd.Process.Pid, helper
}

func readRecord(t *testing.T, f *os.File) string {
	t.Helper()
	f.SetReadDeadline(time.Now().Add(5 * time.Second))
	buf := make([]byte, 600)
	n, err := f.Read(buf)
	if err != nil {
		t.Fatalf("reading the template's end: %v", err)
	}
	return string(buf[:n])
}

func isZombie(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	return err == nil && statState(b) == 'Z'
}

func statState(b []byte) byte {
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] == ')' && i+2 < len(b) {
			return b[i+2]
		}
	}
	return 0
}

// TestForkChildReapsOnlyAfterTheGroupIsKilled: §2.6 — the watchdog asks for
// the reap only once it has looked for leftovers and killed the worker's
// group, so the group's id was still held by the zombie when it signalled it.
func TestForkChildReapsOnlyAfterTheGroupIsKilled(t *testing.T) {
	tp, theirs, _ := fakeTemplate(t, true)
	pid, helper := aWorker(t)
	tp.addKid(pid)
	w := &worker.Worker{ID: 1, Pid: pid, Exited: make(chan struct{})}
	w.Exit = &childProc{t: tp, pid: pid, k: tp.kid(pid)}
	var sawReap, leaderZombie bool
	w.Leftovers = func(*worker.Worker) {
		// No reap record may be on its way yet, and the leader holds the group.
		var fds = []unix.PollFd{{Fd: int32(theirs.Fd()), Events: unix.POLLIN}}
		n, _ := unix.Poll(fds, 0)
		sawReap = n > 0
		leaderZombie = isZombie(pid)
	}
	go tp.readControl()
	syscall.Kill(pid, syscall.SIGKILL) // the worker exits; its helper lives on in its group
	for !isZombie(pid) {
		time.Sleep(time.Millisecond)
	}
	go w.Wait()
	if _, err := theirs.Write([]byte("exited " + strconv.Itoa(pid) + " signal 9\n")); err != nil {
		t.Fatal(err)
	}
	if got, want := readRecord(t, theirs), "reap "+strconv.Itoa(pid)+"\n"; got != want {
		t.Fatalf("the watchdog sent %q; want %q", got, want)
	}
	if sawReap || !leaderZombie {
		t.Fatalf("at the leftover scan: reap already sent %v, leader a zombie %v; want false, true", sawReap, leaderZombie)
	}
	// Signalled before the reap was asked for; its death takes a moment.
	for deadline := time.Now().Add(5 * time.Second); syscall.Kill(helper, 0) == nil && !isZombie(helper); {
		if time.Now().After(deadline) {
			t.Fatalf("pid %d of the worker's group still alive; want it killed with the group", helper)
		}
		time.Sleep(time.Millisecond)
	}
	var ws syscall.WaitStatus
	syscall.Wait4(pid, &ws, 0, nil) // what the template does at "reap"
	<-w.Exited
	if got := w.ExitStatus(); got != "signal: killed" {
		t.Fatalf("exit status %q; want the template's report, signal: killed", got)
	}
	if tp.liveKids() != 0 {
		t.Fatalf("%d workers still held after the reap", tp.liveKids())
	}
}

// TestForkChildTemplateDiesFirst: a template that dies before reporting a
// worker's exit leaves it to the watchdog, which waits for it and reaps it.
func TestForkChildTemplateDiesFirst(t *testing.T) {
	tp, _, tcmd := fakeTemplate(t, true)
	pid, _ := aWorker(t) // the test's child, as a worker re-parented to the watchdog is
	tp.addKid(pid)
	w := &worker.Worker{ID: 1, Pid: pid, Exited: make(chan struct{})}
	w.Exit = &childProc{t: tp, pid: pid, k: tp.kid(pid)}
	go w.Wait()
	templateDies(tp, tcmd)
	syscall.Kill(pid, syscall.SIGKILL) // what PR_SET_PDEATHSIG does
	select {
	case <-w.Exited:
	case <-time.After(5 * time.Second):
		t.Fatal("the worker of a dead template was never reaped")
	}
	if got := w.ExitStatus(); got != "signal: killed" {
		t.Fatalf("exit status %q; want signal: killed", got)
	}
	if !errorsIsESRCH(syscall.Kill(pid, 0)) {
		t.Fatalf("pid %d still exists; want it reaped by the watchdog", pid)
	}
}

// TestForkChildReportedThenTemplateGone: the report came, but the template
// ended before the reap could be asked for: the watchdog reaps it itself.
func TestForkChildReportedThenTemplateGone(t *testing.T) {
	tp, theirs, tcmd := fakeTemplate(t, true)
	pid, _ := aWorker(t)
	tp.addKid(pid)
	w := &worker.Worker{ID: 1, Pid: pid, Exited: make(chan struct{})}
	w.Exit = &childProc{t: tp, pid: pid, k: tp.kid(pid)}
	syscall.Kill(pid, syscall.SIGKILL)
	if err := tp.exitReported([]byte("exited " + strconv.Itoa(pid) + " exit 3\n")); err != nil {
		t.Fatal(err)
	}
	theirs.Close()
	templateDies(tp, tcmd) // closes the watchdog's end: the reap cannot be sent
	w.Wait()
	if got := w.ExitStatus(); got != "exit status 3" {
		t.Fatalf("exit status %q; want the template's report", got)
	}
	if !errorsIsESRCH(syscall.Kill(pid, 0)) {
		t.Fatalf("pid %d still exists; want it reaped by the watchdog", pid)
	}
}

func errorsIsESRCH(err error) bool { return err == syscall.ESRCH }

// TestForkChildBadReports: exit reports that break §2.6 end the template as
// bad_response: a pid it did not fork, a second report, a malformed one.
func TestForkChildBadReports(t *testing.T) {
	for _, tc := range []struct{ name, record string }{
		{"stray", "exited 4242 exit 0\n"},
		{"twice", "exited %d exit 0\n"},
		{"malformed", "exited %d exit\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tp, theirs, _ := fakeTemplate(t, true)
			tp.addKid(777)
			rec := tc.record
			if tc.name != "stray" {
				rec = "exited 777" + rec[len("exited %d"):]
			}
			if tc.name == "twice" {
				theirs.Write([]byte(rec))
			}
			go tp.readControl()
			theirs.Write([]byte(rec))
			select {
			case <-tp.dead:
			case <-time.After(5 * time.Second):
				t.Fatalf("record %q: the template was not ended", rec)
			}
			if tp.reason != "bad_response" {
				t.Fatalf("record %q: reason %q (%s); want bad_response", rec, tp.reason, tp.why)
			}
		})
	}
}
