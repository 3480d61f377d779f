package afterburn

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/afterburn-dev/afterburn/go/afterburn/internal/shapetest"
)

// TestCounts reports what one hello request costs the workers under the real watchdog,
// in counts that a shared machine's noise moves little: system calls (strace -c -f on
// the workers), context switches and OS threads, and their CPU time (indicative). It
// runs when AFTERBURN_TEST_COUNTS=N (requests per case). The cases: one worker with one
// lane at c=1; at c=8, make bench's default (a worker per CPU, one lane each), and one
// worker with eight lanes. System calls are counted by perf's raw_syscalls tracepoint,
// for the workers and the watchdog, where perf can (strace -c on the workers otherwise).
func TestCounts(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("AFTERBURN_TEST_COUNTS"))
	if n <= 0 {
		t.Skip("AFTERBURN_TEST_COUNTS=N runs it")
	}
	for _, tc := range []struct{ c, workers, lanes int }{
		{1, 1, 1},
		{8, runtime.NumCPU(), 1},
		{8, 1, 8},
	} {
		name := fmt.Sprintf("c=%d workers=%d lanes=%d", tc.c, tc.workers, tc.lanes)
		t.Run(name, func(t *testing.T) {
			wd := shapetest.StartWatchdog(t, "-workers", strconv.Itoa(tc.workers), "-lanes", strconv.Itoa(tc.lanes))
			workers := childrenOf(wd.Pid())
			if len(workers) != tc.workers {
				t.Fatalf("the watchdog's children: %v; want %d workers", workers, tc.workers)
			}
			client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: tc.c}}
			defer client.CloseIdleConnections()  // the watchdog's graceful stop would wait for them
			load(t, client, wd.Base, tc.c, 2000) // warm: connections, the workers' heaps
			var cpu time.Duration
			var cs int64
			threads := 0
			for _, w := range workers {
				cpu, cs = cpu-procCPU(t, w), cs-procCtxSwitches(t, w)
			}
			wdCPU := -procCPU(t, wd.Pid())
			start := time.Now()
			load(t, client, wd.Base, tc.c, n)
			elapsed := time.Since(start)
			for _, w := range workers {
				cpu, cs, threads = cpu+procCPU(t, w), cs+procCtxSwitches(t, w), threads+procThreads(t, w)
			}
			wdCPU += procCPU(t, wd.Pid())
			perRequest := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 / float64(n) }
			t.Logf("%s: %d requests, %.0f req/s; per request: workers %.1f µs CPU, %.2f context switches, watchdog %.1f µs CPU; workers' threads: %d",
				name, n, float64(n)/elapsed.Seconds(), perRequest(cpu), float64(cs)/float64(n), perRequest(wdCPU), threads)
			if perfCounts() {
				// Both sides at once, unslowed: the tracepoint counts every call of every
				// thread without stopping the process, as strace's ptrace does.
				pw, pd := startPerf(t, workers), startPerf(t, []int{wd.Pid()})
				load(t, client, wd.Base, tc.c, n)
				for _, side := range []struct {
					who string
					p   *perfStat
				}{{"workers", pw}, {"watchdog", pd}} {
					t.Logf("%s: %s: %s", name, side.who, side.p.stop(t).perRequest(n))
				}
				return
			}
			if _, err := exec.LookPath("strace"); err != nil {
				return
			}
			calls, errs, top := straceCount(t, workers, func() { load(t, client, wd.Base, tc.c, n) })
			t.Logf("%s: workers: %.2f system calls per request (%.2f failed): %s", name, float64(calls)/float64(n), float64(errs)/float64(n), top)
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

// straceCount attaches strace -c -f to the processes while run runs and returns the
// system calls counted, those that failed, and the busiest calls.
func straceCount(t *testing.T, pids []int, run func()) (calls, errs int64, top string) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "strace")
	args := []string{"-c", "-f", "-o", out}
	for _, pid := range pids {
		args = append(args, "-p", strconv.Itoa(pid))
	}
	cmd := exec.Command("strace", args...)
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

// perfEvents are what startPerf counts: every system call, the calls a worker's
// request costs by name, and context switches.
var perfEvents = []string{"raw_syscalls:sys_enter", "context-switches",
	"syscalls:sys_enter_read", "syscalls:sys_enter_write", "syscalls:sys_enter_writev",
	"syscalls:sys_enter_splice", "syscalls:sys_enter_epoll_pwait", "syscalls:sys_enter_futex",
	"syscalls:sys_enter_nanosleep", "syscalls:sys_enter_sched_yield", "syscalls:sys_enter_ppoll"}

// perfCounts reports whether perf stat can count perfEvents here.
var perfCounts = sync.OnceValue(func() bool {
	out, err := exec.Command("perf", "stat", "-x,", "-e", strings.Join(perfEvents, ","), "--", "true").CombinedOutput()
	return err == nil && !strings.Contains(string(out), "<not supported>") && !strings.Contains(string(out), "<not counted>")
})

// perfStat is perf stat attached to processes, its counters enabled and disabled
// through its control descriptors so that they count the requests only.
type perfStat struct {
	cmd      *exec.Cmd
	ctl      *os.File
	ack      *bufio.Reader
	out      string
	counts   map[string]float64
	disabled bool
}

func startPerf(t *testing.T, pids []int) *perfStat {
	t.Helper()
	ctlR, ctlW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	ackR, ackW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	var ps []string
	for _, p := range pids {
		ps = append(ps, strconv.Itoa(p))
	}
	p := &perfStat{out: filepath.Join(t.TempDir(), "perf"), ctl: ctlW, ack: bufio.NewReader(ackR)}
	p.cmd = exec.Command("perf", "stat", "-x,", "-o", p.out, "--control", "fd:3,4", "-D", "-1",
		"-e", strings.Join(perfEvents, ","), "-p", strings.Join(ps, ","))
	p.cmd.ExtraFiles = []*os.File{ctlR, ackW}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ctlR.Close()
	ackW.Close()
	p.command(t, "enable")
	return p
}

// command sends perf a control command and waits for its acknowledgement.
func (p *perfStat) command(t *testing.T, c string) {
	t.Helper()
	if _, err := io.WriteString(p.ctl, c+"\n"); err != nil {
		t.Fatal(err)
	}
	// perf ends each acknowledgement with a NUL, read ahead of the next one.
	if line, err := p.ack.ReadString('\n'); err != nil || strings.Trim(line, "\x00\n") != "ack" {
		t.Fatalf("perf %s: %q, %v", c, line, err)
	}
}

func (p *perfStat) stop(t *testing.T) *perfStat {
	t.Helper()
	p.command(t, "disable")
	p.cmd.Process.Signal(syscall.SIGINT)
	p.cmd.Wait()
	b, err := os.ReadFile(p.out)
	if err != nil {
		t.Fatal(err)
	}
	p.counts = map[string]float64{}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Split(line, ",")
		if len(f) < 3 {
			continue
		}
		if v, err := strconv.ParseFloat(f[0], 64); err == nil {
			p.counts[f[2]] = v
		}
	}
	return p
}

// perRequest formats the counts divided by n requests.
func (p *perfStat) perRequest(n int) string {
	per := func(e string) float64 { return p.counts[e] / float64(n) }
	var b strings.Builder
	fmt.Fprintf(&b, "%.2f system calls and %.2f context switches per request (perf):",
		per("raw_syscalls:sys_enter"), per("context-switches"))
	for _, e := range perfEvents[2:] {
		if v := per(e); v >= 0.005 {
			fmt.Fprintf(&b, " %s %.2f", strings.TrimPrefix(e, "syscalls:sys_enter_"), v)
		}
	}
	return b.String()
}
