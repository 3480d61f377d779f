package afterburn

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/afterburn-dev/afterburn/go/afterburn/internal/shapetest"
)

// TestCounts reports what one hello request costs the worker under the real watchdog,
// in counts that a shared machine's noise moves little: system calls (strace -c -f on
// the worker), context switches and OS threads, and its CPU time (indicative). It runs
// when AFTERBURN_TEST_COUNTS=N (requests per case); the cases are one lane at c=1 and
// eight lanes at c=8. Syscalls need strace on PATH.
func TestCounts(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("AFTERBURN_TEST_COUNTS"))
	if n <= 0 {
		t.Skip("AFTERBURN_TEST_COUNTS=N runs it")
	}
	for _, c := range []int{1, 8} {
		t.Run("c="+strconv.Itoa(c), func(t *testing.T) {
			wd := shapetest.StartWatchdog(t, "-lanes", strconv.Itoa(c))
			worker := childOf(t, wd.Pid())
			client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: c}}
			defer client.CloseIdleConnections() // the watchdog's graceful stop would wait for them
			load(t, client, wd.Base, c, 2000)   // warm: connections, the worker's heap
			cpu0, cs0 := procCPU(t, worker), procCtxSwitches(t, worker)
			start := time.Now()
			load(t, client, wd.Base, c, n)
			elapsed := time.Since(start)
			cpu, cs := procCPU(t, worker)-cpu0, procCtxSwitches(t, worker)-cs0
			t.Logf("c=%d: %d requests, %.0f req/s; worker: %.1f µs CPU, %.2f context switches per request, %d threads",
				c, n, float64(n)/elapsed.Seconds(), float64(cpu.Microseconds())/float64(n), float64(cs)/float64(n), procThreads(t, worker))
			if _, err := exec.LookPath("strace"); err != nil {
				return
			}
			calls, errs, top := straceCount(t, worker, func() { load(t, client, wd.Base, c, n) })
			t.Logf("c=%d: worker: %.2f system calls per request (%.2f failed): %s", c, float64(calls)/float64(n), float64(errs)/float64(n), top)
		})
	}
}

// load sends n GET requests over c connections and checks each answer.
func load(t *testing.T, client *http.Client, base string, c, n int) {
	t.Helper()
	var wg sync.WaitGroup
	var failed sync.Once
	for g := range c {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := g; i < n; i += c {
				resp, err := client.Get(base + "/hello")
				if err != nil {
					failed.Do(func() { t.Error(err) })
					return
				}
				_, err = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if err != nil || resp.StatusCode != 200 {
					failed.Do(func() { t.Errorf("status %d, %v", resp.StatusCode, err) })
					return
				}
			}
		}()
	}
	wg.Wait()
}

// procCPU is the time a process's threads have run so far, summed from
// /proc/PID/task/*/schedstat (nanoseconds; /proc/PID/stat counts 10 ms ticks).
func procCPU(t *testing.T, pid int) time.Duration {
	t.Helper()
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/schedstat", pid))
	var sum int64
	for _, p := range tasks {
		b, err := os.ReadFile(p)
		if err != nil {
			continue // the thread exited meanwhile
		}
		f := strings.Fields(string(b))
		if len(f) == 0 {
			continue
		}
		ns, _ := strconv.ParseInt(f[0], 10, 64)
		sum += ns
	}
	if sum == 0 {
		t.Fatalf("no schedstat for process %d", pid)
	}
	return time.Duration(sum)
}

// procCtxSwitches sums the voluntary and involuntary context switches of a process's
// threads.
func procCtxSwitches(t *testing.T, pid int) int64 {
	t.Helper()
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/status", pid))
	var sum int64
	for _, p := range tasks {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n") {
			for _, k := range []string{"voluntary_ctxt_switches:", "nonvoluntary_ctxt_switches:"} {
				if v, ok := strings.CutPrefix(line, k); ok {
					n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
					sum += n
				}
			}
		}
	}
	return sum
}

// straceCount attaches strace -c -f to pid while run runs and returns the system calls
// counted, those that failed, and the busiest calls.
func straceCount(t *testing.T, pid int, run func()) (calls, errs int64, top string) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "strace")
	cmd := exec.Command("strace", "-c", "-f", "-o", out, "-p", strconv.Itoa(pid))
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(stderr)
	attached := make(chan struct{})
	go func() {
		once := sync.Once{}
		for sc.Scan() {
			if strings.Contains(sc.Text(), "attached") {
				once.Do(func() { close(attached) })
			}
		}
	}()
	select {
	case <-attached:
	case <-time.After(testBound):
		t.Fatal("strace did not attach")
	}
	run()
	cmd.Process.Signal(syscall.SIGINT)
	cmd.Wait()
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var rows []string
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 5 || strings.HasPrefix(line, "%") || strings.HasPrefix(line, "-") {
			continue
		}
		name := f[len(f)-1]
		ncalls, _ := strconv.ParseInt(f[3], 10, 64)
		var nerr int64
		if len(f) == 6 {
			nerr, _ = strconv.ParseInt(f[4], 10, 64)
		}
		if name == "total" {
			calls, errs = ncalls, nerr
			continue
		}
		rows = append(rows, fmt.Sprintf("%s %d", name, ncalls))
	}
	return calls, errs, strings.Join(rows, ", ")
}
