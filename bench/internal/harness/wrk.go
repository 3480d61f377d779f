package harness

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// LoadResult is one wrk run.
type LoadResult struct {
	RPS    float64 `json:"rps"`
	P50us  float64 `json:"p50_us"`
	P99us  float64 `json:"p99_us"`
	Errors int     `json:"errors"`
	// Requests is how many requests wrk completed; Host what the configuration's processes
	// spent on them (hostcost.go); WrkCPUms wrk's own CPU time, user and system; Guard the
	// quiet-run guard's figures for the run (quiet.go).
	Requests int64     `json:"requests"`
	Host     *HostCost `json:"host,omitempty"`
	WrkCPUms float64   `json:"wrk_cpu_ms"`
	Guard    *Guard    `json:"guard,omitempty"`
}

// errNoRequests is a run in which not one request completed: a warm-up of a slow baseline
// (forking a JVM or Node at c=8) can be shorter than one request.
var errNoRequests = errors.New("wrk completed no request")

// Load drives a URL with wrk, pinned to the load generator's CPU.
type Load struct {
	CPU        string        // taskset list for wrk, "" for no pinning
	ScriptPath string        // wrk Lua script that makes the request a 1 KiB POST
	Timeout    time.Duration // wrk's per-request timeout; 0 for 10 s
}

var (
	rpsLine     = regexp.MustCompile(`Requests/sec:\s+([0-9.]+)`)
	countLine   = regexp.MustCompile(`(\d+) requests in `)
	latencyLine = regexp.MustCompile(`^\s+(50|99)%\s+([0-9.]+)(us|ms|s)\s*$`)
	errorsLine  = regexp.MustCompile(`Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)`)
	non2xxLine  = regexp.MustCompile(`Non-2xx or 3xx responses: (\d+)`)
	totalLine   = regexp.MustCompile(`(?m)^\s*(\d+) requests in `)
)

// Run runs wrk with one thread and conns connections for d.
func (l Load) Run(url string, workload Workload, conns int, d time.Duration) (LoadResult, error) {
	timeout := l.Timeout
	if timeout == 0 {
		timeout = 10 * time.Second
	}
	args := []string{"wrk", "-t1", fmt.Sprintf("-c%d", conns), fmt.Sprintf("-d%ds", int(d.Seconds())), "--latency",
		"--timeout", fmt.Sprintf("%ds", int(timeout.Seconds()))}
	if workload == Echo1K {
		args = append(args, "-s", l.ScriptPath)
	}
	switch workload {
	case Model:
		url += "model" // forkmode.go: GET /model
	case IO:
		url += "io" // lanes.go: GET /io
	}
	args = append(args, url)
	if l.CPU != "" {
		args = append([]string{"taskset", "-c", l.CPU}, args...)
	}
	cmd := exec.Command(args[0], args[1:]...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return LoadResult{}, fmt.Errorf("%s: %v\n%s", strings.Join(args, " "), err, out.String())
	}
	r, err := parseWrk(out.String())
	// taskset execs wrk, so the process waited for is wrk itself.
	r.WrkCPUms = ms(cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime())
	return r, err
}

func parseWrk(text string) (LoadResult, error) {
	var r LoadResult
	m := rpsLine.FindStringSubmatch(text)
	if m == nil {
		return r, fmt.Errorf("wrk printed no Requests/sec:\n%s", text)
	}
	r.RPS, _ = strconv.ParseFloat(m[1], 64)
	if r.RPS == 0 {
		return r, errNoRequests
	}
	if m := countLine.FindStringSubmatch(text); m != nil {
		r.Requests, _ = strconv.ParseInt(m[1], 10, 64)
	}
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		if m := latencyLine.FindStringSubmatch(sc.Text()); m != nil {
			v, _ := strconv.ParseFloat(m[2], 64)
			switch m[3] {
			case "ms":
				v *= 1e3
			case "s":
				v *= 1e6
			}
			if m[1] == "50" {
				r.P50us = v
			} else {
				r.P99us = v
			}
		}
	}
	if m := totalLine.FindStringSubmatch(text); m != nil {
		r.Requests, _ = strconv.ParseInt(m[1], 10, 64)
	}
	if m := errorsLine.FindStringSubmatch(text); m != nil {
		for _, s := range m[1:] {
			n, _ := strconv.Atoi(s)
			r.Errors += n
		}
	}
	if m := non2xxLine.FindStringSubmatch(text); m != nil {
		n, _ := strconv.Atoi(m[1])
		r.Errors += n
	}
	if r.P50us == 0 || r.P99us == 0 {
		return r, fmt.Errorf("wrk printed no latency distribution:\n%s", text)
	}
	return r, nil
}

// writeEchoScript writes the wrk script of the 1 KiB echo workload.
func writeEchoScript(dir string) (string, error) {
	path := dir + "/echo1k.lua"
	script := `wrk.method = "POST"
wrk.body = string.rep("abcdefghijklmnop", 64)
wrk.headers["Content-Type"] = "application/octet-stream"
`
	return path, os.WriteFile(path, []byte(script), 0o644)
}
