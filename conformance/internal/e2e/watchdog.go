// Package e2e is the e2e layer: it starts the watchdog with the fixture
// and sends real HTTP requests (conformance/README.md "Two layers").
package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"time"

	"github.com/afterburn-dev/afterburn/conformance/internal/proc"
)

// Watchdog is one running watchdog process.
type Watchdog struct {
	cmd  *exec.Cmd
	Log  *proc.Buffer // its stderr (and stdout): own lines, worker output, access log
	Addr string       // host:port from its "listening on" line
	// MetricsAddr is where /metrics is served (§10.1): the address of its
	// "metrics on" line, logged before "listening on", or Addr without one
	// (a check's own -metrics_port -1).
	MetricsAddr string
	done        chan struct{}
	state       *os.ProcessState
}

var (
	listening = regexp.MustCompile(`listening on ([^\s"]+)`)
	metricsOn = regexp.MustCompile(`metrics on ([^\s"]+)`)
)

// watchdogEnv is the inherited environment without AFTERBURN_*, FIXTURE_*
// and the watchdog's own setting names (§10.2: an environment variable of
// the same name as a flag configures it), plus extra.
func watchdogEnv(extra map[string]string) []string {
	settings := map[string]bool{}
	for _, s := range []string{"port", "PORT", "listen_host", "fprocess", "workers", "exec_timeout",
		"read_timeout", "write_timeout", "max_inflight", "init_timeout", "healthcheck_interval",
		"shutdown_timeout", "max_request_body", "max_header_bytes", "prefix_logs", "stdio",
		"handshake", "metrics_port", "max_requests", "max_age", "max_worker_rss", "trust_request_id", "request_buffering", "request_buffer_memory",
		"response_buffering", "response_buffer_memory", "buffer_dir", "buffer_spill_max", "cancel_grace",
		"log_format", "spawn", "fork_timeout", "lanes", "isolation", "isolation_grace", "front"} {
		settings[s] = true
	}
	return proc.Environ(func(k string) bool { return settings[k] || proc.IsProtocolVariable(k) }, extra)
}

// StartWatchdog runs BIN -port 0 -metrics_port 0 -listen_host 127.0.0.1
// FLAGS -- /bin/sh -c "exec FUNCTION" and waits for its "listening on ADDR"
// line (not for readiness; see WaitReady). Both ports are free ones the
// kernel picks, so watchdogs run side by side; /metrics is on its own
// listener, as by default (§10.1).
func StartWatchdog(ctx context.Context, bin, function string, flags []string, env map[string]string) (*Watchdog, error) {
	return startWatchdog(ctx, bin, function, flags, env, nil)
}

// watchdogArgs are the arguments of a watchdog the suite starts: free ports on
// 127.0.0.1, flags, and the function as /bin/sh -c "exec FUNCTION".
func watchdogArgs(function string, flags []string) []string {
	args := append([]string{"-port", "0", "-metrics_port", "0", "-listen_host", "127.0.0.1"}, flags...)
	return append(args, "--", "/bin/sh", "-c", "exec "+function)
}

// startWatchdog is StartWatchdog, with extra descriptors the watchdog
// inherits from fd 3 on, without close-on-exec, as a shell may leave them.
func startWatchdog(ctx context.Context, bin, function string, flags []string, env map[string]string, extra []*os.File) (*Watchdog, error) {
	args := watchdogArgs(function, flags)
	w := &Watchdog{Log: proc.NewBuffer(8 << 20), done: make(chan struct{})}
	cmd := exec.Command(bin, args...)
	cmd.Stdout = w.Log
	cmd.Stderr = w.Log
	cmd.Env = watchdogEnv(env)
	cmd.WaitDelay = 2 * time.Second
	cmd.ExtraFiles = extra
	proc.NewGroup(cmd)
	w.cmd = cmd
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start watchdog: %v", err)
	}
	go func() {
		cmd.Wait()
		w.state = cmd.ProcessState
		close(w.done)
	}()
	lctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-w.done:
			cancel()
		case <-lctx.Done():
		}
	}()
	m, err := w.Log.WaitFor(lctx, 0, listening)
	if err != nil {
		w.Stop()
		return nil, fmt.Errorf("watchdog %s: no \"listening on ADDR\" line (%s)\n%s",
			strings.Join(args, " "), w.ExitString(), w.Tail())
	}
	w.Addr, w.MetricsAddr = m[1], m[1]
	if m := metricsOn.FindStringSubmatch(w.Log.String()); m != nil {
		w.MetricsAddr = m[1]
	}
	return w, nil
}

// Pid is the watchdog's process id.
func (w *Watchdog) Pid() int { return w.cmd.Process.Pid }

// URL is http://ADDR + path.
func (w *Watchdog) URL(path string) string { return "http://" + w.Addr + path }

// MetricsURL is the URL of /metrics (§10.1, §10.4).
func (w *Watchdog) MetricsURL() string { return "http://" + w.MetricsAddr + "/metrics" }

// Exited reports whether the process has ended.
func (w *Watchdog) Exited() bool {
	select {
	case <-w.done:
		return true
	default:
		return false
	}
}

// ExitString describes how the watchdog ended, or "still running".
func (w *Watchdog) ExitString() string {
	if !w.Exited() {
		return "still running"
	}
	return w.state.String()
}

// Wait waits for the watchdog to exit and returns its exit code.
func (w *Watchdog) Wait(ctx context.Context) (int, error) {
	select {
	case <-w.done:
		return w.state.ExitCode(), nil
	case <-ctx.Done():
		return 0, fmt.Errorf("the watchdog did not exit")
	}
}

// Signal sends sig to the watchdog process.
func (w *Watchdog) Signal(sig syscall.Signal) error { return w.cmd.Process.Signal(sig) }

// Stop ends the watchdog: SIGTERM for a graceful stop (it stops its
// workers, §9.4), then SIGKILL to its group if it lingers.
func (w *Watchdog) Stop() {
	if w.Exited() {
		return
	}
	w.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-w.done:
	case <-time.After(5 * time.Second):
		proc.KillGroup(w.cmd)
		<-w.done
	}
}

// Tail is the end of the watchdog's log for failure reports.
func (w *Watchdog) Tail() string {
	t := w.Log.Tail(40)
	if t == "" {
		return "watchdog log: (empty)"
	}
	return "watchdog log (tail):\n  " + strings.ReplaceAll(t, "\n", "\n  ")
}

// Status is the JSON body of /_/ready and /_/health (§9.2).
type Status struct {
	Starting     *int `json:"starting"`
	Idle         *int `json:"idle"`
	Busy         *int `json:"busy"`
	Backoff      *int `json:"backoff"`
	CrashLooping *int `json:"crash_looping"`
	// Fork mode only (§2.6, §9.2): how live workers were started, and the
	// template, which is a child of the watchdog but not a worker.
	Started     map[string]int `json:"started,omitempty"`
	Template    string         `json:"template,omitempty"` // starting, ready, backoff or none
	TemplatePid int            `json:"template_pid,omitempty"`
	// With lanes > 1 only (§2.5, §9.2): the lanes of live workers by state.
	Lanes *LaneCounts `json:"lanes,omitempty"`
}

// status fetches /_/ready or /_/health: the HTTP status and the parsed body.
func (w *Watchdog) status(ctx context.Context, path string) (int, *Status, []byte, error) {
	req, _ := http.NewRequestWithContext(ctx, "GET", w.URL(path), nil)
	resp, err := probeClient.Do(req)
	if err != nil {
		return 0, nil, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return resp.StatusCode, nil, body, err
	}
	var s Status
	if err := json.Unmarshal(body, &s); err != nil {
		return resp.StatusCode, nil, body, fmt.Errorf("%s body is not JSON: %q", path, body)
	}
	return resp.StatusCode, &s, body, nil
}

// probeClient polls the watchdog's own endpoints; no keep-alive, so a
// closed watchdog shows at once.
var probeClient = &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 5 * time.Second}

// pollInterval is how often a condition is re-checked while waiting on
// the watchdog's own signal (/_/ready, /metrics). Polling, never a fixed
// sleep: the wait ends as soon as the condition holds.
const pollInterval = 10 * time.Millisecond

// WaitReady polls /_/ready until it answers 200 and until the given
// number of workers are idle (0: any ready worker).
func (w *Watchdog) WaitReady(ctx context.Context, idle int) error {
	var last string
	for {
		code, st, body, err := w.status(ctx, "/_/ready")
		switch {
		case err != nil:
			last = err.Error()
		case code == 200 && (idle == 0 || (st.Idle != nil && *st.Idle >= idle)):
			return nil
		default:
			last = fmt.Sprintf("%d %s", code, strings.TrimSpace(string(body)))
		}
		if w.Exited() {
			return fmt.Errorf("the watchdog exited (%s) before /_/ready", w.ExitString())
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("/_/ready not 200 with %d idle workers in time; last: %s", idle, last)
		case <-time.After(pollInterval):
		}
	}
}
