package harness

import (
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Crash to answering: how long a pool of one worker is without an answer after its worker
// dies. The harness asks the function for its pid (GET /pid), kills that pid with SIGKILL,
// and asks again at once, and again, until a different pid answers: the replacement, which
// the watchdog started (exec) or had forked from its template (fork, PROTOCOL.md §2.6). With
// one worker nothing else can answer, so the time from the kill to that answer is the time
// the slot took to be replaced and to serve, as a client waiting on it sees it.

// crashProbe is what timing a crash needs; a test replaces every part.
type crashProbe struct {
	ask   func() (pid int, err error) // one request answered by the pid that served it
	kill  func(pid int) error
	now   func() time.Time
	limit time.Duration // a replacement slower than this is an error
}

// crashToAnswering kills the worker that answers and returns the time from the kill to the
// first answer from another pid. Failed requests in between (a request dispatched to the
// dying worker is answered 502, §9.3) are asked again at once.
func (p crashProbe) crashToAnswering() (time.Duration, error) {
	old, err := p.ask()
	if err != nil {
		return 0, fmt.Errorf("before the crash: %v", err)
	}
	start := p.now()
	if err := p.kill(old); err != nil {
		return 0, fmt.Errorf("kill %d: %v", old, err)
	}
	var last error
	for {
		pid, err := p.ask()
		elapsed := p.now().Sub(start)
		if err == nil && pid != old {
			return elapsed, nil
		}
		if err != nil {
			last = err
		}
		if elapsed > p.limit {
			return 0, fmt.Errorf("no other pid answered within %v of killing %d (last error: %v)", p.limit, old, last)
		}
	}
}

// httpCrashProbe asks base + "pid" over one kept-alive client and kills with SIGKILL.
func httpCrashProbe(base string, limit time.Duration) crashProbe {
	client := &http.Client{Timeout: limit}
	return crashProbe{
		ask: func() (int, error) {
			resp, err := client.Get(base + "pid")
			if err != nil {
				return 0, err
			}
			b, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil {
				return 0, err
			}
			if resp.StatusCode != http.StatusOK {
				return 0, fmt.Errorf("GET /pid = %d", resp.StatusCode)
			}
			return strconv.Atoi(strings.TrimSpace(string(b)))
		},
		kill:  func(pid int) error { return syscall.Kill(pid, syscall.SIGKILL) },
		now:   time.Now,
		limit: limit,
	}
}
