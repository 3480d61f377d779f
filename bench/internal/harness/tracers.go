package harness

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// The counters of make bench-counts that need a tool: system calls (perf's raw_syscalls
// tracepoint, or strace where perf cannot count it) and user-space instructions (valgrind's
// callgrind). Each is started around a fixed number of requests.

// SyscallMethod names how system calls were counted.
const (
	SyscallsPerf   = "perf stat -e raw_syscalls:sys_enter (a tracepoint: every call of every thread, the process unslowed)"
	SyscallsStrace = "strace -c -f (ptrace: every call of every thread, but the process runs many times slower, " +
		"so calls that depend on time or on how work batches up — Go's sysmon nanosleep, futex, epoll_pwait, " +
		"EAGAIN reads — are counted as they happen under the tracer, not as they happen without it)"
)

// syscallMethod picks perf when it can count the tracepoint here, else strace; "" when
// neither can.
func syscallMethod() string {
	if out, err := exec.Command("perf", "stat", "-x,", "-e", "raw_syscalls:sys_enter", "--", "true").CombinedOutput(); err == nil {
		if n, _, err := parsePerfCSV(string(out)); err == nil && n > 0 {
			return SyscallsPerf
		}
	}
	if _, err := exec.LookPath("strace"); err == nil {
		return SyscallsStrace
	}
	return ""
}

// syscallCounter counts one process's system calls, all its threads, from start to stop.
type syscallCounter interface {
	// stop ends the count and returns the calls, and per call name when the method knows.
	stop() (total int64, byName map[string]int64, err error)
}

func startSyscallCounter(method string, pid int, dir string) (syscallCounter, error) {
	switch method {
	case SyscallsPerf:
		return startPerf(pid, dir)
	case SyscallsStrace:
		return startStrace(pid, dir)
	}
	return nil, fmt.Errorf("harness: no way to count system calls here (neither perf nor strace)")
}

// perfCount is perf stat attached to a process with its counter disabled, enabled and
// disabled through its control descriptors (--control fd:3,4), so that it counts exactly
// the window between start and stop, not perf's own start-up.
type perfCount struct {
	cmd    *exec.Cmd
	ctl    *os.File
	ack    *bufio.Reader
	ackF   *os.File
	out    string
	stderr bytes.Buffer
}

func startPerf(pid int, dir string) (*perfCount, error) {
	ctlR, ctlW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	ackR, ackW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	p := &perfCount{ctl: ctlW, ackF: ackR, ack: bufio.NewReader(ackR), out: filepath.Join(dir, fmt.Sprintf("perf-%d.csv", pid))}
	p.cmd = exec.Command("perf", "stat", "-x,", "-e", "raw_syscalls:sys_enter", "-p", strconv.Itoa(pid),
		"-D", "-1", "--control", "fd:3,4", "-o", p.out)
	p.cmd.ExtraFiles = []*os.File{ctlR, ackW}
	p.cmd.Stderr = &p.stderr
	err = p.cmd.Start()
	ctlR.Close()
	ackW.Close()
	if err != nil {
		return nil, err
	}
	if err := p.command("enable"); err != nil {
		p.cmd.Process.Kill()
		p.cmd.Wait()
		return nil, err
	}
	return p, nil
}

// command sends perf a control command and waits for its acknowledgement.
func (p *perfCount) command(c string) error {
	if _, err := fmt.Fprintln(p.ctl, c); err != nil {
		return fmt.Errorf("perf %s: %v\n%s", c, err, p.stderr.String())
	}
	p.ackF.SetReadDeadline(time.Now().Add(30 * time.Second))
	line, err := p.ack.ReadString('\n')
	// perf writes its acknowledgement with the string's terminating NUL: "ack\n\x00".
	if err != nil || strings.Trim(line, "\x00\n") != "ack" {
		return fmt.Errorf("perf %s: no ack (%q, %v)\n%s", c, line, err, p.stderr.String())
	}
	return nil
}

func (p *perfCount) stop() (int64, map[string]int64, error) {
	err := p.command("disable")
	p.cmd.Process.Signal(os.Interrupt)
	p.cmd.Wait()
	p.ctl.Close()
	p.ackF.Close()
	if err != nil {
		return 0, nil, err
	}
	b, err := os.ReadFile(p.out)
	if err != nil {
		return 0, nil, err
	}
	n, _, err := parsePerfCSV(string(b))
	return n, nil, err
}

// parsePerfCSV reads perf stat -x, output: the count of the first event, and its name.
func parsePerfCSV(text string) (int64, string, error) {
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Split(line, ",")
		if len(f) < 3 {
			continue
		}
		n, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return 0, f[2], fmt.Errorf("harness: perf counted no %s: %q", f[2], f[0])
		}
		return n, f[2], nil
	}
	return 0, "", fmt.Errorf("harness: no count in perf's output: %q", text)
}

// straceCount is strace -c -f attached to a process.
type straceCount struct {
	cmd  *exec.Cmd
	out  string
	log  *logBuffer
	done chan struct{}
}

var straceAttached = regexp.MustCompile(`(?m)^strace: Process \d+ attached`)

func startStrace(pid int, dir string) (*straceCount, error) {
	s := &straceCount{out: filepath.Join(dir, fmt.Sprintf("strace-%d.txt", pid)), log: newLogBuffer(), done: make(chan struct{})}
	s.cmd = exec.Command("strace", "-c", "-f", "-o", s.out, "-p", strconv.Itoa(pid))
	s.cmd.Stderr = s.log
	if err := s.cmd.Start(); err != nil {
		return nil, err
	}
	go func() { s.cmd.Wait(); close(s.done) }()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := s.log.waitFor(ctx, straceAttached, s.done); err != nil {
		s.cmd.Process.Kill()
		return nil, fmt.Errorf("strace -p %d: %v\n%s", pid, err, s.log.String())
	}
	return s, nil
}

func (s *straceCount) stop() (int64, map[string]int64, error) {
	s.cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-s.done:
	case <-time.After(30 * time.Second):
		s.cmd.Process.Kill()
		<-s.done
	}
	b, err := os.ReadFile(s.out)
	if err != nil {
		return 0, nil, fmt.Errorf("strace: %v\n%s", err, s.log.String())
	}
	return parseStraceSummary(string(b))
}

// parseStraceSummary reads strace -c's table: calls per system call, and the total.
//
//	% time     seconds  usecs/call     calls    errors syscall
//	------ ----------- ----------- --------- --------- ----------------
//	 43.58    0.675438          84      7960           nanosleep
//	  4.40    0.068141           1     42206     11176 read
//	------ ----------- ----------- --------- --------- ----------------
//	100.00    1.549903          13    114922     11255 total
func parseStraceSummary(text string) (int64, map[string]int64, error) {
	byName := map[string]int64{}
	var total int64 = -1
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 5 || len(f) > 6 || strings.HasPrefix(f[0], "%") || strings.HasPrefix(f[0], "-") {
			continue
		}
		calls, err := strconv.ParseInt(f[3], 10, 64)
		if err != nil {
			return 0, nil, fmt.Errorf("harness: bad calls %q in strace's line %q", f[3], sc.Text())
		}
		if name := f[len(f)-1]; name == "total" {
			total = calls
		} else {
			byName[name] += calls
		}
	}
	if total < 0 {
		return 0, nil, fmt.Errorf("harness: strace -c output without a total line: %q", text)
	}
	return total, byName, nil
}

// valgrindCommand runs argv under callgrind, its dumps in dir. Only the process itself is
// instrumented: children it starts (a watchdog's workers, the relay's child) run natively.
func valgrindCommand(argv []string, dir string) []string {
	return append([]string{"valgrind", "--tool=callgrind", "--trace-children=no",
		"--callgrind-out-file=" + filepath.Join(dir, "callgrind.out.%p")}, argv...)
}

// valgrindEnv is the environment a Go program needs under valgrind (issue 18): Go's
// asynchronous preemption signals running threads (SIGURG), and valgrind, which runs one
// thread at a time and delivers signals at points of its own choosing, does not cope with it.
var valgrindEnv = []string{"GODEBUG=asyncpreemptoff=1"}

// callgrindZero zeroes the instruction counters of a process running under callgrind.
func callgrindZero(pid int) error {
	if out, err := exec.Command("callgrind_control", "-z", strconv.Itoa(pid)).CombinedOutput(); err != nil {
		return fmt.Errorf("callgrind_control -z %d: %v\n%s", pid, err, out)
	}
	return nil
}

// callgrindDump dumps the counters of a process running under callgrind (its dumps in dir)
// and returns the instructions (Ir) counted since they were last zeroed.
func callgrindDump(pid int, dir string) (int64, error) {
	pattern := filepath.Join(dir, fmt.Sprintf("callgrind.out.%d.*", pid))
	before, _ := filepath.Glob(pattern)
	if out, err := exec.Command("callgrind_control", "-d", strconv.Itoa(pid)).CombinedOutput(); err != nil {
		return 0, fmt.Errorf("callgrind_control -d %d: %v\n%s", pid, err, out)
	}
	after, _ := filepath.Glob(pattern)
	var fresh []string
	for _, f := range after {
		if !slices.Contains(before, f) {
			fresh = append(fresh, f)
		}
	}
	if len(fresh) != 1 {
		return 0, fmt.Errorf("callgrind_control -d %d: %d new dumps in %s; want 1", pid, len(fresh), dir)
	}
	b, err := os.ReadFile(fresh[0])
	if err != nil {
		return 0, err
	}
	return parseCallgrindTotal(string(b))
}

// parseCallgrindTotal returns the Ir (instructions executed) of a callgrind dump: the column
// of Ir in its "events:" line, read from its "totals:" line (or "summary:", which older
// dumps write instead).
func parseCallgrindTotal(text string) (int64, error) {
	col := -1
	var totals, summary []string
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "events:"):
			for i, e := range strings.Fields(strings.TrimPrefix(line, "events:")) {
				if e == "Ir" {
					col = i
				}
			}
		case strings.HasPrefix(line, "totals:"):
			totals = strings.Fields(strings.TrimPrefix(line, "totals:"))
		case strings.HasPrefix(line, "summary:"):
			summary = strings.Fields(strings.TrimPrefix(line, "summary:"))
		}
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	if totals == nil {
		totals = summary
	}
	if col < 0 || col >= len(totals) {
		return 0, fmt.Errorf("harness: callgrind dump without an Ir total (events column %d, totals %q)", col, totals)
	}
	return strconv.ParseInt(totals[col], 10, 64)
}
