package harness

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// LargeBody is a body of Bytes echoed through the watchdog and a worker, largeBodyReps times.
type LargeBody struct {
	Bytes    int64   `json:"bytes"`
	MBPerSec float64 `json:"mb_per_s"` // the median echo: body bytes / elapsed, 1 MB = 10^6 bytes
	// MBPerSecSpread is every echo's: one echo is one sample, and a JIT compiling or a
	// collector running during it moves that sample a long way.
	MBPerSecSpread    Spread  `json:"mb_per_s_spread"`
	WatchdogPeakRSSMB float64 `json:"watchdog_peak_rss_mib"`
	WorkerPeakRSSMB   float64 `json:"worker_peak_rss_mib"`
}

// measureLargeBody echoes size bytes through a watchdog with one worker, from a client pinned
// to the load CPU, and reads the peak resident set (VmHWM) of the watchdog and of the worker
// afterwards. The body streams (request_buffering=false, PROTOCOL.md §6.6): the figure is the
// pipe path's, not that of a temporary file in buffer_dir, which the default would go through
// for a body this size.
func measureLargeBody(ctx context.Context, root, serverCPU, loadCPU, watchdog string, lang Language, size int64) (*LargeBody, error) {
	argv := append([]string{watchdog, "-port", "0", "-metrics_port", "0", "-listen_host", "127.0.0.1", "-workers", "1",
		"-max_request_body", "0", "-request_buffering=false", "-exec_timeout", "300s", "-read_timeout", "300s", "-write_timeout", "300s", "--"},
		lang.AfterBurn...)
	s, err := startServer(ctx, lang.Name+"/large-body", "afterburn-watchdog", root, serverCPU, argv, nil)
	if err != nil {
		return nil, err
	}
	defer s.stop()
	if err := s.waitReady(ctx); err != nil {
		return nil, err
	}
	times, err := runEchoClient(ctx, loadCPU, s.url(), size)
	if err != nil {
		return nil, fmt.Errorf("%s large body: %v\n%s", lang.Name, err, s.log.String())
	}
	rates := make([]float64, len(times))
	for i, t := range times {
		rates[i] = float64(size) / 1e6 / t.Seconds()
	}
	spread := spreadOf(rates)
	lb := &LargeBody{Bytes: size, MBPerSec: spread.Median, MBPerSecSpread: spread}
	pid := s.cmd.Process.Pid
	lb.WatchdogPeakRSSMB = peakRSSMiB(pid)
	for _, child := range childPIDs(pid) {
		lb.WorkerPeakRSSMB = max(lb.WorkerPeakRSSMB, treePeakRSSMiB(child))
	}
	return lb, nil
}

// EchoClientCommand is the subcommand of afterburn-bench that runs the large-body client
// (EchoClientMain) in a process of its own, pinned like wrk to the load CPU: in the
// harness's own process the client would share CPUs with whatever the Go scheduler chose,
// including the one under test.
const EchoClientCommand = "echo-client"

// runEchoClient runs this program's echo-client subcommand on loadCPU and returns how long
// each measured echo of size bytes took.
func runEchoClient(ctx context.Context, loadCPU, url string, size int64) ([]time.Duration, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	argv := []string{self, EchoClientCommand, url, strconv.FormatInt(size, 10)}
	if loadCPU != "" {
		argv = append([]string{"taskset", "-c", loadCPU}, argv...)
	}
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("echo client: %v: %s", err, stderr.String())
	}
	return parseEchoTimes(out)
}

// parseEchoTimes reads what EchoClientMain printed: largeBodyReps durations in nanoseconds.
func parseEchoTimes(out []byte) ([]time.Duration, error) {
	var times []time.Duration
	for _, line := range strings.Fields(string(out)) {
		ns, err := strconv.ParseInt(line, 10, 64)
		if err != nil || ns <= 0 {
			return nil, fmt.Errorf("echo client printed %q", out)
		}
		times = append(times, time.Duration(ns))
	}
	if len(times) != largeBodyReps {
		return nil, fmt.Errorf("echo client printed %d durations, want %d", len(times), largeBodyReps)
	}
	return times, nil
}

// largeBodyReps is how many measured echoes the large-body figure is the median of, as the
// wrk figures are of their repetitions.
const largeBodyReps = 3

// EchoClientMain is the echo-client subcommand: args are the URL and the body size. It
// echoes warmupBodyBytes unmeasured first (a JIT compiles the streaming path on the first
// megabytes), then the body largeBodyReps times, and prints each measured echo's
// nanoseconds on a line of its own.
func EchoClientMain(args []string) int {
	if len(args) != 2 {
		fmt.Fprintf(os.Stderr, "usage: afterburn-bench %s URL BYTES\n", EchoClientCommand)
		return 2
	}
	size, err := strconv.ParseInt(args[1], 10, 64)
	if err != nil || size <= 0 {
		fmt.Fprintf(os.Stderr, "afterburn-bench %s: bad size %q\n", EchoClientCommand, args[1])
		return 2
	}
	if _, err := echoOnce(args[0], warmupBodyBytes); err != nil {
		fmt.Fprintf(os.Stderr, "afterburn-bench %s: %v\n", EchoClientCommand, err)
		return 1
	}
	for range largeBodyReps {
		elapsed, err := echoOnce(args[0], size)
		if err != nil {
			fmt.Fprintf(os.Stderr, "afterburn-bench %s: %v\n", EchoClientCommand, err)
			return 1
		}
		fmt.Println(elapsed.Nanoseconds())
	}
	return 0
}

// warmupBodyBytes is the unmeasured echo before the measured one.
const warmupBodyBytes = 32 << 20

// echoOnce posts size bytes and reads the echo back, checking every byte, and returns how
// long it took.
func echoOnce(url string, size int64) (time.Duration, error) {
	req, err := http.NewRequest(http.MethodPost, url, io.LimitReader(&patternReader{}, size))
	if err != nil {
		return 0, err
	}
	req.ContentLength = size
	start := time.Now()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	n, err := io.Copy(&patternChecker{}, resp.Body)
	resp.Body.Close()
	elapsed := time.Since(start)
	if err != nil || n != size || resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("status %d, echoed %d of %d bytes, %v", resp.StatusCode, n, size, err)
	}
	return elapsed, nil
}

// patternPeriod is the length of the body's repeating pattern: a prime, so that no
// power-of-two buffering lines up with it and a misplaced or repeated piece of the echo
// shows as a mismatch.
const patternPeriod = 251

// patternBlock holds whole periods of the pattern, so that producing and checking the
// body is a copy or a compare of long runs rather than a loop per byte: the client must
// not be what limits the measurement.
var patternBlock = func() []byte {
	b := make([]byte, patternPeriod*256)
	for i := range b {
		b[i] = byte(i % patternPeriod)
	}
	return b
}()

// patternReader yields the endless repeating pattern without allocating.
type patternReader struct{ off int }

func (r *patternReader) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		c := copy(p[n:], patternBlock[r.off:])
		n += c
		r.off = (r.off + c) % patternPeriod
	}
	return n, nil
}

// patternChecker accepts only the pattern patternReader yields, from its start.
type patternChecker struct{ off int }

func (c *patternChecker) Write(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		want := patternBlock[c.off:]
		m := min(len(want), len(p)-n)
		if !bytes.Equal(p[n:n+m], want[:m]) {
			return n, fmt.Errorf("the echo differs from the body sent")
		}
		n += m
		c.off = (c.off + m) % patternPeriod
	}
	return n, nil
}

// peakRSSMiB reads VmHWM from /proc (Linux only; 0 elsewhere).
func peakRSSMiB(pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 64)
			return kb / 1024
		}
	}
	return 0
}

// treePeakRSSMiB is the largest peak of a process and its descendants: a worker started as
// "/bin/sh -c exec ..." is the exec'd program itself, but a launcher may fork.
func treePeakRSSMiB(pid int) float64 {
	m := peakRSSMiB(pid)
	for _, c := range childPIDs(pid) {
		m = max(m, treePeakRSSMiB(c))
	}
	return m
}

func childPIDs(pid int) []int {
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
	var pids []int
	for _, t := range tasks {
		b, _ := os.ReadFile(t)
		for _, f := range bytes.Fields(b) {
			if n, err := strconv.Atoi(string(f)); err == nil {
				pids = append(pids, n)
			}
		}
	}
	return pids
}
