package worker_test

import (
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/afterburn-dev/afterburn/go/internal/watchdog/internal/testworker"
	"github.com/afterburn-dev/afterburn/go/internal/watchdog/obs"
	"github.com/afterburn-dev/afterburn/go/internal/watchdog/proc"
	"github.com/afterburn-dev/afterburn/go/internal/watchdog/wire"
	"github.com/afterburn-dev/afterburn/go/internal/watchdog/worker"
)

// The test binary doubles as the worker these tests start (internal/testworker).
func TestMain(m *testing.M) {
	testworker.RunIfChild()
	os.Exit(m.Run())
}

// startChild starts the test binary as a one-lane worker on fds 3 and 4
// (PROTOCOL.md §2.2) and returns the watchdog's side of it, reaped and its
// pipes closed when the test ends.
func startChild(t *testing.T, env ...string) *worker.Worker {
	t.Helper()
	reqR, reqW, respR, respW := lanePipes(t)
	cmd := exec.Command(os.Args[0])
	cmd.ExtraFiles = []*os.File{reqR, respW}
	cmd.Env = append(os.Environ(), append([]string{"AFTERBURN_TEST_CHILD=1", "AFTERBURN_FDS=3,4"}, env...)...)
	cmd.SysProcAttr = proc.SysProcAttr()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	respW.Close() // the child's end; reqR stays, as the watchdog keeps it (§9.3)
	w := worker.New(1, reqW, reqR, respR)
	w.Pid = cmd.Process.Pid
	w.Reap = func() (*os.ProcessState, error) {
		err := cmd.Wait()
		return cmd.ProcessState, err
	}
	go w.Wait()
	t.Cleanup(func() {
		w.Kill()
		<-w.Exited
		w.ClosePipes()
	})
	return w
}

var quiet = obs.NewLogger(io.Discard, false)

// lanePipes makes a lane's request pipe and response pipe.
func lanePipes(t *testing.T) (reqR, reqW, respR, respW *os.File) {
	t.Helper()
	reqR, reqW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	respR, respW, err = os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	return reqR, reqW, respR, respW
}

// TestHandshake: a worker that answers §3.1's handshake is settled by it: one
// lane in use, the capabilities it lists (§3.2).
func TestHandshake(t *testing.T) {
	for _, tc := range []struct {
		env    []string
		tokens bool
	}{{nil, false}, {[]string{"AFTERBURN_TEST_TOKENS=1"}, true}} {
		w := startChild(t, tc.env...)
		if ie := w.Handshake(time.Now().Add(10*time.Second), false, quiet); ie != nil {
			t.Fatalf("env %v: handshake: %v", tc.env, ie)
		}
		if w.Tokens != tc.tokens || w.InUse != 1 || w.Forkable {
			t.Errorf("env %v: tokens %v, lanes in use %d, forkable %v; want tokens %v, 1 lane, not forkable",
				tc.env, w.Tokens, w.InUse, w.Forkable, tc.tokens)
		}
		// A repeated handshake (the liveness check, §3.5) is answered too.
		if ie := w.Handshake(time.Now().Add(10*time.Second), false, quiet); ie != nil {
			t.Fatalf("env %v: second handshake: %v", tc.env, ie)
		}
	}
}

// TestUnaskedHandshake: a worker forked with "fork-child <slot> unasked"
// (§2.6) is sent no handshake request: its reply, already on the response
// pipe, settles it. A repeated handshake (§3.5) is asked as ever, and a
// worker not forked so is asked the first time too.
func TestUnaskedHandshake(t *testing.T) {
	// No exchange capability: the repeated handshake then carries no token
	// (§4.6) for the canned reply to echo.
	const reply = "HTTP/1.1 200 OK\r\nAfterBurn-Protocol: 1\r\nAfterBurn-Capabilities: streams\r\nContent-Length: 0\r\n\r\n"
	for _, unasked := range []bool{true, false} {
		reqR, reqW, respR, respW := lanePipes(t)
		w := worker.New(1, reqW, reqR, respR)
		w.Unasked = unasked
		written := func() string {
			t.Helper()
			reqR.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
			b := make([]byte, 512)
			n, _ := reqR.Read(b)
			return string(b[:n])
		}
		for i, wantAsked := range []bool{!unasked, true} {
			if _, err := io.WriteString(respW, reply); err != nil {
				t.Fatal(err)
			}
			if ie := w.Handshake(time.Now().Add(10*time.Second), false, quiet); ie != nil {
				t.Fatalf("unasked %v, handshake %d: %v", unasked, i+1, ie)
			}
			got := written()
			if asked := strings.HasPrefix(got, "OPTIONS * HTTP/1.1\r\n"); asked != wantAsked || (!asked && got != "") {
				t.Errorf("unasked %v, handshake %d: the watchdog wrote %q; want a handshake request %v", unasked, i+1, got, wantAsked)
			}
		}
		if w.InUse != 1 || w.Tokens {
			t.Errorf("unasked %v: %d lanes in use, tokens %v; want the reply's settlement: 1, false", unasked, w.InUse, w.Tokens)
		}
		respW.Close()
		w.ClosePipes()
	}
}

// TestHandshakeFailures: each way a handshake fails has its restart reason
// (§9.1, §3.4, §3.5).
func TestHandshakeFailures(t *testing.T) {
	for _, tc := range []struct {
		init      string
		deadline  time.Duration
		reason    wire.RestartReason
		violation bool
		text      string
	}{
		{"fail", 10 * time.Second, wire.ReasonInitFailed, false, "exited during initialisation, before its handshake reply"},
		{"hang", 200 * time.Millisecond, wire.ReasonInitTimeout, false, "no handshake reply before init_timeout"},
		{"bad-version", 10 * time.Second, wire.ReasonInitFailed, true, `version mismatch: watchdog offers "1", library speaks "7"`},
	} {
		w := startChild(t, "AFTERBURN_TEST_INIT="+tc.init)
		ie := w.Handshake(time.Now().Add(tc.deadline), false, quiet)
		if ie == nil || ie.Reason != tc.reason || ie.Violation != tc.violation || !strings.Contains(ie.Error(), tc.text) {
			t.Errorf("init=%s: handshake error %v; want reason %s, violation %v, containing %q", tc.init, ie, tc.reason, tc.violation, tc.text)
		}
	}
}

// TestKill: kill ends the worker's process group, is seen by every waiter,
// and makes the pipes fail rather than block (PROTOCOL.md §2.1).
func TestKill(t *testing.T) {
	w := startChild(t)
	if ie := w.Handshake(time.Now().Add(10*time.Second), false, quiet); ie != nil {
		t.Fatal(ie)
	}
	if w.HasExited() || w.WasKilled() {
		t.Fatalf("exited %v, killed %v before Kill", w.HasExited(), w.WasKilled())
	}
	w.Kill()
	select {
	case <-w.Exited:
	case <-time.After(10 * time.Second):
		t.Fatal("not reaped within 10 s of Kill")
	}
	if !w.HasExited() || !w.WasKilled() || !strings.Contains(w.ExitStatus(), "killed") {
		t.Errorf("exited %v, killed %v, status %q; want both, and a kill in the status", w.HasExited(), w.WasKilled(), w.ExitStatus())
	}
	if !w.AwaitExit() {
		t.Error("AwaitExit false after the exit")
	}
	if reason := w.First().IdleCheck(); reason != wire.ReasonExited {
		t.Errorf("idle check of a dead worker's lane: %q; want exited (§9.6)", reason)
	}
}
