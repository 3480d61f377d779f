package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// options are the limits of contract D (issue 22): every block runs from the
// repository root as one `bash -euo pipefail` script for at most timeout; a
// serve block must be ready within readyTimeout.
type options struct {
	root         string
	timeout      time.Duration
	readyTimeout time.Duration
	stopGrace    time.Duration // after SIGTERM, before SIGKILL
}

type outcome int

const (
	passed outcome = iota
	failed
	skipped
	notRun // not an sh block
)

type result struct {
	outcome outcome
	why     string // a skip's reason, a failure's cause
	output  []byte // what the script wrote, for a failure
}

// runBlock runs one sh block as its attributes say; blocks with another
// language are not run.
func runBlock(b *block, o options) result {
	if b.lang != "sh" {
		return result{outcome: notRun}
	}
	attrs, err := parseAttrs(b.info)
	if err != nil {
		return result{outcome: failed, why: err.Error()}
	}
	for k := range attrs {
		if k != "skip" && k != "serve" && k != "ready" {
			return result{outcome: failed, why: fmt.Sprintf("unknown attribute %s= (want skip=, serve= or ready=)", k)}
		}
	}
	if reason, ok := attrs["skip"]; ok {
		if strings.TrimSpace(reason) == "" || len(attrs) > 1 {
			return result{outcome: failed, why: `skip= needs a reason and no other attribute: skip="needs Docker"`}
		}
		return result{outcome: skipped, why: reason}
	}
	if port, ok := attrs["serve"]; ok {
		n, err := strconv.Atoi(port)
		ready := attrs["ready"]
		if ready == "" {
			ready = "/_/ready"
		}
		if err != nil || n < 1 || n > 65535 || !strings.HasPrefix(ready, "/") {
			return result{outcome: failed, why: fmt.Sprintf("serve=%q ready=%q: want a port and a path", port, attrs["ready"])}
		}
		return serveBlock(b, o, n, ready)
	}
	if _, ok := attrs["ready"]; ok {
		return result{outcome: failed, why: "ready= without serve="}
	}
	return scriptBlock(b, o)
}

// script is a started block: bash in a process group of its own, reading
// the block from a file (stdin is /dev/null, so a command that reads it cannot
// eat the script), its output in a file (a pipe would keep Wait waiting for any
// background process holding it).
type script struct {
	cmd     *exec.Cmd
	out     *os.File
	exited  chan struct{} // closed once bash has ended
	waitErr error         // Wait's error, once exited is closed
}

func startScript(b *block, o options) (*script, error) {
	dir, err := os.MkdirTemp("", "doctest-")
	if err != nil {
		return nil, err
	}
	path := dir + "/block.sh"
	if err := os.WriteFile(path, []byte(b.text), 0o600); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	out, err := os.Create(dir + "/output")
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	cmd := exec.Command("bash", "-euo", "pipefail", path)
	cmd.Dir = o.root
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		out.Close()
		os.RemoveAll(dir)
		return nil, err
	}
	s := &script{cmd: cmd, out: out, exited: make(chan struct{})}
	go func() {
		s.waitErr = cmd.Wait()
		os.Remove(path)
		close(s.exited)
	}()
	return s, nil
}

// signal signals the script's whole process group.
func (s *script) signal(sig syscall.Signal) { syscall.Kill(-s.cmd.Process.Pid, sig) }

// output is what the script wrote; it also removes the file. Call it once
// the script has ended.
func (s *script) output() []byte {
	s.out.Seek(0, io.SeekStart)
	b, _ := io.ReadAll(s.out)
	s.out.Close()
	os.RemoveAll(filepath.Dir(s.out.Name()))
	return b
}

// scriptBlock runs a block to its end, within the time limit; whatever it
// left running in its process group is killed after.
func scriptBlock(b *block, o options) result {
	s, err := startScript(b, o)
	if err != nil {
		return result{outcome: failed, why: err.Error()}
	}
	t := time.NewTimer(o.timeout)
	defer t.Stop()
	select {
	case <-s.exited:
		s.stop(syscall.SIGKILL, o.stopGrace)
	case <-t.C:
		s.stop(syscall.SIGKILL, o.stopGrace)
		return result{outcome: failed, why: fmt.Sprintf("still running after %v", o.timeout), output: s.output()}
	}
	if s.waitErr != nil {
		return result{outcome: failed, why: s.waitErr.Error(), output: s.output()}
	}
	s.output()
	return result{outcome: passed}
}

// serveBlock starts a long-running server and passes once GET
// http://127.0.0.1:port<ready> answers 200, then stops its process group with
// SIGTERM (SIGKILL after stopGrace).
func serveBlock(b *block, o options, port int, ready string) result {
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		c.Close()
		return result{outcome: failed, why: addr + " is in use before the block started: its answer would not be the block's"}
	}
	s, err := startScript(b, o)
	if err != nil {
		return result{outcome: failed, why: err.Error()}
	}
	r := waitReady(s, "http://"+addr+ready, o.readyTimeout)
	s.stop(syscall.SIGTERM, o.stopGrace)
	out := s.output()
	if r.outcome == failed {
		r.output = out
	}
	return r
}

// stop signals the script's process group with sig and waits until every
// process of the group has ended, sending SIGKILL once grace has passed.
// Processes the script left behind are the doctest's children (it is their
// subreaper), so they are reaped here too, not left as zombies.
func (s *script) stop(sig syscall.Signal, grace time.Duration) {
	pgid := s.cmd.Process.Pid
	s.signal(sig)
	done := make(chan struct{})
	go func() {
		<-s.exited // bash itself, through cmd.Wait
		for {
			_, err := syscall.Wait4(-pgid, nil, 0, nil)
			if err != syscall.EINTR && err != nil {
				break // ECHILD: the group is gone
			}
		}
		close(done)
	}()
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
		s.signal(syscall.SIGKILL)
		<-done
	}
}

// waitReady polls url until it answers 200, the server's script ends, or
// limit passes. The server is another process: its readiness path is the one
// signal it gives, so it is asked for it every 50 ms.
func waitReady(s *script, url string, limit time.Duration) result {
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true, Proxy: nil}}
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	last := "no answer"
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		resp, err := client.Do(req)
		if err == nil {
			io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return result{outcome: passed}
			}
			last = resp.Status
		} else if !errors.Is(err, context.DeadlineExceeded) {
			last = err.Error()
		}
		select {
		case <-s.exited:
			return result{outcome: failed, why: fmt.Sprintf("the server ended (%v) before %s answered 200", exitText(s.waitErr), url)}
		case <-ctx.Done():
			return result{outcome: failed, why: fmt.Sprintf("%s did not answer 200 within %v (last: %s)", url, limit, last)}
		case <-tick.C:
		}
	}
}

func exitText(err error) string {
	if err == nil {
		return "exit status 0"
	}
	return err.Error()
}

// summary counts outcomes over every file.
type summary struct{ passed, failed, skipped int }

func (s summary) String() string {
	return fmt.Sprintf("%d passed, %d failed, %d skipped", s.passed, s.failed, s.skipped)
}

// runFiles runs the sh blocks of every file in order and reports each on w.
func runFiles(files []string, o options, w io.Writer) summary {
	becomeSubreaper()
	var sum summary
	for _, file := range files {
		src, err := os.ReadFile(file)
		if err != nil {
			fmt.Fprintf(w, "FAIL %s: %v\n", file, err)
			sum.failed++
			continue
		}
		blocks, err := parseBlocks(file, src)
		if err != nil {
			fmt.Fprintf(w, "FAIL %v\n", err)
			sum.failed++
			continue
		}
		for i := range blocks {
			b := &blocks[i]
			start := time.Now()
			r := runBlock(b, o)
			took := time.Since(start).Round(10 * time.Millisecond)
			switch r.outcome {
			case passed:
				sum.passed++
				fmt.Fprintf(w, "PASS %s (%v)\n", b.where(), took)
			case skipped:
				sum.skipped++
				fmt.Fprintf(w, "SKIP %s: %s\n", b.where(), r.why)
			case failed:
				sum.failed++
				fmt.Fprintf(w, "FAIL %s (%v): %s\n", b.where(), took, r.why)
				fmt.Fprintf(w, "%s", indent("    | ", b.text))
				if len(r.output) > 0 {
					fmt.Fprintf(w, "  output:\n%s", indent("    ", string(tail(r.output, 60))))
				}
			}
		}
	}
	return sum
}

// tail is the last n lines of b.
func tail(b []byte, n int) []byte {
	b = bytes.TrimRight(b, "\n")
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] == '\n' {
			if n--; n == 0 {
				return b[i+1:]
			}
		}
	}
	return b
}

func indent(prefix, text string) string {
	var sb strings.Builder
	for _, line := range strings.Split(strings.TrimRight(text, "\n"), "\n") {
		sb.WriteString(prefix + line + "\n")
	}
	return sb.String()
}

// becomeSubreaper makes the processes a block leaves behind children of this
// process when their parent ends (Linux PR_SET_CHILD_SUBREAPER), so stop can
// wait for a block's whole process group and reap it.
func becomeSubreaper() {
	const prSetChildSubreaper = 36
	syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0)
}
