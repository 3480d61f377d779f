// Package wire is the wire layer: it starts the fixture exactly as the
// watchdog would in fd mode (PROTOCOL.md §2.2, §2.3), writes each vector's
// raw bytes to the request pipe and checks what comes back on the response
// pipe.
package wire

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/afterburn-dev/afterburn/conformance/internal/proc"
)

// BaseEnv is the AFTERBURN_* environment of §2.3 for worker 1 of a
// watchdog with default limits.
var BaseEnv = map[string]string{
	"AFTERBURN_PROTOCOL":         "1",
	"AFTERBURN_FDS":              "3,4",
	"AFTERBURN_WORKER_ID":        "1",
	"AFTERBURN_MAX_HEADER_BYTES": "32768",
	"AFTERBURN_MAX_BODY_BYTES":   "67108864",
}

// fixture is one running fixture process and the parent's ends of its pipes.
type fixture struct {
	cmd    *exec.Cmd
	req    *os.File // request pipe, write end (the child's fd 3 reads it)
	resp   *os.File // response pipe, read end (the child's fd 4 writes it)
	stdout *proc.Buffer
	stderr *proc.Buffer
	done   chan struct{} // closed when the process has exited
	state  *os.ProcessState
	// With lanes (§2.5): lanes[0] is lane 1 (req, resp above), then lanes
	// 2 to K, and the cancel pipe's write end.
	lanes  []lane
	cancel *os.File
}

// startFixture runs /bin/sh -c "exec FUNCTION" with fd 0 /dev/null, fds 1
// and 2 captured, the request pipe on fd 3 and the response pipe on fd 4.
// With lanes > 1 it also passes lanes 2 to K at fds 5, 6, … and the cancel
// pipe after them, named by AFTERBURN_STREAM_FDS and
// AFTERBURN_STREAM_CANCEL_FD, as a watchdog started with -lanes K does
// (PROTOCOL.md §2.5).
func startFixture(function string, env map[string]string, lanes int) (*fixture, error) {
	f := &fixture{
		stdout: proc.NewBuffer(64 << 10), stderr: proc.NewBuffer(64 << 10),
		done: make(chan struct{}),
	}
	var child, ours []*os.File // the child's ends, in fd order from 3; ours
	fail := func(err error) (*fixture, error) {
		for _, c := range append(child, ours...) {
			c.Close()
		}
		return nil, err
	}
	for range max(lanes, 1) {
		reqR, reqW, err := os.Pipe()
		if err != nil {
			return fail(err)
		}
		respR, respW, err := os.Pipe()
		if err != nil {
			reqR.Close()
			reqW.Close()
			return fail(err)
		}
		child = append(child, reqR, respW)
		ours = append(ours, reqW, respR)
		f.lanes = append(f.lanes, lane{req: reqW, resp: respR})
	}
	f.req, f.resp = f.lanes[0].req, f.lanes[0].resp
	fixed := map[string]string{}
	if lanes > 1 {
		cancelR, cancelW, err := os.Pipe()
		if err != nil {
			return fail(err)
		}
		child = append(child, cancelR)
		ours = append(ours, cancelW)
		f.cancel = cancelW
		var fds []string
		for fd := 5; fd < 3+2*lanes; fd++ {
			fds = append(fds, strconv.Itoa(fd))
		}
		fixed["AFTERBURN_STREAM_FDS"] = strings.Join(fds, ",")
		fixed["AFTERBURN_STREAM_CANCEL_FD"] = strconv.Itoa(3 + 2*lanes)
	}
	cmd := exec.Command("/bin/sh", "-c", "exec "+function)
	cmd.Stdin = nil // /dev/null
	cmd.Stdout = f.stdout
	cmd.Stderr = f.stderr
	cmd.ExtraFiles = child // fd 3, fd 4, then the lanes and the cancel pipe
	cmd.Env = proc.Environ(proc.IsProtocolVariable, BaseEnv, fixed, env)
	cmd.WaitDelay = time.Second
	proc.NewGroup(cmd)
	f.cmd = cmd
	err := cmd.Start()
	// The child has its own copies; keeping ours would hide its EOFs.
	for _, c := range child {
		c.Close()
	}
	child = nil
	if err != nil {
		return fail(fmt.Errorf("start fixture: %v", err))
	}
	go func() {
		cmd.Wait()
		f.state = cmd.ProcessState
		close(f.done)
	}()
	return f, nil
}

// exit waits for the process to exit and returns its exit code, -1 when a
// signal killed it.
func (f *fixture) exit(ctx context.Context) (int, error) {
	select {
	case <-f.done:
		return f.state.ExitCode(), nil
	case <-ctx.Done():
		return 0, errors.New("the process did not exit")
	}
}

// exitString describes how the process ended.
func (f *fixture) exitString() string {
	select {
	case <-f.done:
		return f.state.String()
	default:
		return "still running"
	}
}

// stop kills the process group and releases the pipes.
func (f *fixture) stop() {
	proc.KillGroup(f.cmd)
	for _, l := range f.lanes {
		l.req.Close()
		l.resp.Close()
	}
	if f.cancel != nil {
		f.cancel.Close()
	}
	<-f.done
}

// lane is the parent's ends of one lane's pipes (§2.5).
type lane struct {
	req  *os.File // request pipe, write end
	resp *os.File // response pipe, read end
}

// logs is the fixture's output for a failure report.
func (f *fixture) logs() string {
	var b strings.Builder
	if s := f.stderr.Tail(30); s != "" {
		fmt.Fprintf(&b, "fixture stderr (tail):\n%s\n", indent(s))
	} else {
		b.WriteString("fixture stderr: (empty)\n")
	}
	if s := f.stdout.Tail(10); s != "" {
		fmt.Fprintf(&b, "fixture stdout (tail):\n%s\n", indent(s))
	}
	fmt.Fprintf(&b, "fixture process: %s", f.exitString())
	return b.String()
}

func indent(s string) string {
	return "  " + strings.ReplaceAll(s, "\n", "\n  ")
}
