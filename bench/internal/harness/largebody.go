package harness

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// LargeBody is one body of Bytes echoed through the watchdog and a worker.
type LargeBody struct {
	Bytes             int64   `json:"bytes"`
	MBPerSec          float64 `json:"mb_per_s"` // body bytes / elapsed, 1 MB = 10^6 bytes
	WatchdogPeakRSSMB float64 `json:"watchdog_peak_rss_mib"`
	WorkerPeakRSSMB   float64 `json:"worker_peak_rss_mib"`
}

// measureLargeBody echoes size bytes through a watchdog with one worker and reads the peak
// resident set (VmHWM) of the watchdog and of the worker afterwards.
func measureLargeBody(ctx context.Context, root, cpu, watchdog string, lang Language, size int64) (*LargeBody, error) {
	argv := append([]string{watchdog, "-port", "0", "-listen_host", "127.0.0.1", "-workers", "1",
		"-max_request_body", "0", "-exec_timeout", "300s", "-read_timeout", "300s", "-write_timeout", "300s", "--"},
		lang.AfterBurn...)
	s, err := startServer(ctx, lang.Name+"/large-body", "afterburn-watchdog", root, cpu, argv, nil)
	if err != nil {
		return nil, err
	}
	defer s.stop()
	if err := s.waitReady(ctx); err != nil {
		return nil, err
	}
	// One unmeasured echo first: a JIT (Java, Node) compiles the streaming path on the
	// first megabytes, and the throughput runs warm up too.
	if _, err := echoOnce(ctx, s, lang, warmupBodyBytes); err != nil {
		return nil, err
	}
	elapsed, err := echoOnce(ctx, s, lang, size)
	if err != nil {
		return nil, err
	}
	lb := &LargeBody{Bytes: size, MBPerSec: float64(size) / 1e6 / elapsed.Seconds()}
	pid := s.cmd.Process.Pid
	lb.WatchdogPeakRSSMB = peakRSSMiB(pid)
	for _, child := range childPIDs(pid) {
		lb.WorkerPeakRSSMB = max(lb.WorkerPeakRSSMB, treePeakRSSMiB(child))
	}
	return lb, nil
}

// warmupBodyBytes is the unmeasured echo before the measured one.
const warmupBodyBytes = 32 << 20

// echoOnce posts size bytes and reads the echo back, returning how long it took.
func echoOnce(ctx context.Context, s *server, lang Language, size int64) (time.Duration, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.url(), io.LimitReader(patternReader{}, size))
	if err != nil {
		return 0, err
	}
	req.ContentLength = size
	start := time.Now()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, fmt.Errorf("%s large body: %v\n%s", lang.Name, err, s.log.String())
	}
	n, err := io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	elapsed := time.Since(start)
	if err != nil || n != size || resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("%s large body: status %d, echoed %d of %d bytes, %v\n%s", lang.Name, resp.StatusCode, n, size, err, s.log.String())
	}
	return elapsed, nil
}

// patternReader yields an endless repeating byte pattern without allocating.
type patternReader struct{}

func (patternReader) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(i % 251)
	}
	return len(p), nil
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
