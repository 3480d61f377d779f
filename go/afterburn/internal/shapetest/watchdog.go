package shapetest

import (
	"bufio"
	"context"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// workerEnv marks the test binary started by the watchdog as its worker.
const workerEnv = "AFTERBURN_SHAPETEST_WORKER"

// IsWorker reports whether this test binary runs as the watchdog's worker: TestMain then
// serves the handler under test instead of running the tests (as net/http/cgi's tests
// run their own binary as the child).
func IsWorker() bool { return os.Getenv(workerEnv) == "1" }

// Watchdog is a real afterburn-watchdog serving this test binary as its worker, on
// 127.0.0.1 only.
type Watchdog struct {
	Base string // http://127.0.0.1:PORT
	cmd  *exec.Cmd
	mu   sync.Mutex
	log  strings.Builder
	done chan struct{}
}

// Pid is the watchdog's process id.
func (wd *Watchdog) Pid() int { return wd.cmd.Process.Pid }

// Log is everything the watchdog wrote so far, its workers' lines included.
func (wd *Watchdog) Log() string {
	wd.mu.Lock()
	defer wd.mu.Unlock()
	return wd.log.String()
}

// StartWatchdog starts the watchdog of $AFTERBURN_WATCHDOG, else go/bin/afterburn-watchdog
// of this checkout (`make go/bin/afterburn-watchdog`; skipped when there is none), with
// flags, one worker and free ports, and returns once /_/ready says the worker is idle.
// The watchdog gets SIGTERM when the test ends.
func StartWatchdog(t *testing.T, flags ...string) *Watchdog {
	t.Helper()
	bin := os.Getenv("AFTERBURN_WATCHDOG")
	if bin == "" {
		bin = filepath.Join(Dir(), "..", "..", "go", "bin", "afterburn-watchdog")
		if _, err := os.Stat(bin); err != nil {
			t.Skipf("no watchdog at %s: make go/bin/afterburn-watchdog (make test-go builds it)", bin)
		}
	}
	args := append([]string{"-listen_host", "127.0.0.1", "-port", "0", "-metrics_port", "0", "-workers", "1"}, flags...)
	args = append(args, "--", os.Args[0], "-test.run=^$")
	wd := &Watchdog{cmd: exec.Command(bin, args...), done: make(chan struct{})}
	wd.cmd.Env = append(os.Environ(), workerEnv+"=1")
	out, err := wd.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	wd.cmd.Stderr = wd.cmd.Stdout
	if err := wd.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	listening := make(chan string, 1)
	go func() {
		defer close(wd.done)
		sc := bufio.NewScanner(out)
		re := regexp.MustCompile(`listening on (\S+)$`)
		for sc.Scan() {
			wd.mu.Lock()
			wd.log.WriteString(sc.Text() + "\n")
			wd.mu.Unlock()
			if m := re.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case listening <- m[1]:
				default:
				}
			}
		}
	}()
	t.Cleanup(func() {
		wd.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-wd.done:
		case <-time.After(10 * time.Second):
			wd.cmd.Process.Kill()
			<-wd.done
		}
		wd.cmd.Wait()
	})
	select {
	case addr := <-listening:
		wd.Base = "http://" + addr
	case <-wd.done:
		t.Fatalf("the watchdog exited before listening; log:\n%s", wd.Log())
	case <-time.After(30 * time.Second):
		t.Fatalf("the watchdog is not listening after 30s; log:\n%s", wd.Log())
	}
	wd.waitReady(t)
	return wd
}

// waitReady polls /_/ready, the watchdog's own signal, until the worker has started.
func (wd *Watchdog) waitReady(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		req, _ := http.NewRequestWithContext(ctx, "GET", wd.Base+"/_/ready", nil)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("/_/ready not 200 within 30s (%v); log:\n%s", err, wd.Log())
		case <-wd.done:
			t.Fatalf("the watchdog exited before /_/ready; log:\n%s", wd.Log())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// Do sends a request with the given request id (X-Request-Id, which the watchdog trusts
// by default, §5.6) and returns the response and its body.
func (wd *Watchdog) Do(t *testing.T, req *http.Request, id string) (*http.Response, string) {
	t.Helper()
	req.Header.Set("X-Request-Id", id)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v; log:\n%s", req.Method, req.URL, err, wd.Log())
	}
	defer resp.Body.Close()
	var b strings.Builder
	if _, err := bufio.NewReader(resp.Body).WriteTo(&b); err != nil {
		t.Fatalf("%s %s: reading the body: %v", req.Method, req.URL, err)
	}
	if got := resp.Header.Get("AfterBurn-Request-Id"); got != id {
		t.Errorf("AfterBurn-Request-Id %q; want %q", got, id)
	}
	return resp, b.String()
}

// WaitLog waits until the watchdog's log has a line containing s (a worker's print is
// logged as the response goes out, not before).
func (wd *Watchdog) WaitLog(t *testing.T, s string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(wd.Log(), s) {
		if time.Now().After(deadline) {
			t.Fatalf("no line with %q in the watchdog's log:\n%s", s, wd.Log())
		}
		time.Sleep(10 * time.Millisecond)
	}
}
