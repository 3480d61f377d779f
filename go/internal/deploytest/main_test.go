package deploytest

// The test binary plays the worker too: given the argument
// afterburn-deploytest-worker it serves a small handler through the Go
// library, so the watchdog under test runs a real AfterBurn/1 child.

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/afterburn-dev/afterburn/go/afterburn"
)

const workerArg = "afterburn-deploytest-worker"

// repoRoot is the repository, seen from go/internal/deploytest.
const repoRoot = "../../.."

var tempDir string

func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == workerArg {
		runWorker()
		return
	}
	var err error
	if tempDir, err = os.MkdirTemp("", "afterburn-deploytest-"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(tempDir)
	os.Exit(code)
}

// runWorker answers /status/N with status N and anything else with 200.
func runWorker() {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if code, ok := strings.CutPrefix(r.URL.Path, "/status/"); ok {
			n, err := strconv.Atoi(code)
			if err == nil {
				w.WriteHeader(n)
				return
			}
		}
		fmt.Fprintf(w, "hello from %s\n", r.URL.Path)
	})
	if err := afterburn.Serve(h); err != nil {
		fmt.Fprintln(os.Stderr, "worker:", err)
		os.Exit(1)
	}
}

var (
	buildOnce   sync.Once
	builtBinary string
	buildErr    error
)

// watchdogBinary is the watchdog built by the Dockerfile's recipe (see
// dockerfile_test.go), once per test run.
func watchdogBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		builtBinary = filepath.Join(tempDir, "afterburn-watchdog")
		buildErr = buildLikeDockerfile(builtBinary)
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return builtBinary
}

// runningWatchdog is a watchdog process serving on 127.0.0.1.
type runningWatchdog struct {
	addr        string // host:port of the function port
	metricsAddr string // host:port of the /metrics listener (PROTOCOL.md §10.1)
	cmd         *exec.Cmd
	mu          sync.Mutex
	log         strings.Builder // its stderr so far, for failure messages
}

func (w *runningWatchdog) stderr() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.log.String()
}

// startWatchdog runs the built watchdog with two workers of this test
// binary, on free ports (/metrics on one of its own), waits for its
// "listening on" line, then polls /_/ready until a worker has answered its
// handshake. It stops the watchdog at cleanup.
func startWatchdog(t *testing.T, extraArgs ...string) *runningWatchdog {
	t.Helper()
	args := append([]string{"-port", "0", "-metrics_port", "0", "-listen_host", "127.0.0.1", "-workers", "2"}, extraArgs...)
	args = append(args, "--", os.Args[0], workerArg)
	w := &runningWatchdog{cmd: exec.Command(watchdogBinary(t), args...)}
	w.cmd.Env = append(os.Environ(), "fprocess=", "port=", "PORT=", "metrics_port=")
	stderr, err := w.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := w.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		w.cmd.Process.Kill()
		w.cmd.Wait()
	})
	// PROTOCOL.md §10.1: "metrics on ADDR" comes before "listening on ADDR".
	listening := regexp.MustCompile(`^afterburn-watchdog: listening on (\S+)$`)
	metricsOn := regexp.MustCompile(`^afterburn-watchdog: metrics on (\S+)$`)
	addrc := make(chan [2]string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		var metricsAddr string
		for sc.Scan() {
			w.mu.Lock()
			w.log.WriteString(sc.Text() + "\n")
			w.mu.Unlock()
			if m := metricsOn.FindStringSubmatch(sc.Text()); m != nil {
				metricsAddr = m[1]
			}
			if m := listening.FindStringSubmatch(sc.Text()); m != nil {
				addrc <- [2]string{m[1], metricsAddr}
			}
		}
		close(addrc)
	}()
	select {
	case addrs, ok := <-addrc:
		if !ok {
			t.Fatalf("watchdog exited before listening:\n%s", w.stderr())
		}
		w.addr, w.metricsAddr = addrs[0], addrs[1]
		if w.metricsAddr == "" {
			t.Fatalf("no \"metrics on ADDR\" line before \"listening on\":\n%s", w.stderr())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("no \"listening on\" line in 30s:\n%s", w.stderr())
	}
	// PROTOCOL.md §9.2: /_/ready answers 200 once a worker is ready.
	deadline := time.Now().Add(30 * time.Second)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		resp, err := http.Get("http://" + w.addr + "/_/ready")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return w
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("/_/ready not 200 in 30s (last: %v %v):\n%s", resp, err, w.stderr())
		}
		<-tick.C
	}
}

// get fetches a URL and returns its status and body.
func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	return resp.StatusCode, string(b)
}

// watchdogFlags are the setting names --help lists; every one is also an
// environment variable (PROTOCOL.md §10.2).
func watchdogFlags(t *testing.T) map[string]bool {
	t.Helper()
	out, err := exec.Command(watchdogBinary(t), "--help").CombinedOutput()
	if err != nil {
		t.Fatalf("afterburn-watchdog --help: %v\n%s", err, out)
	}
	flags := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^  -(\w+)`).FindAllStringSubmatch(string(out), -1) {
		flags[m[1]] = true
	}
	if len(flags) == 0 {
		t.Fatalf("no flag in --help:\n%s", out)
	}
	return flags
}
