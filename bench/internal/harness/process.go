package harness

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
)

// server is one running configuration under test: a process that logs
// "listening on ADDR" on stderr once it accepts connections.
type server struct {
	name string
	cmd  *exec.Cmd
	log  *logBuffer
	addr string
}

// listeningLine matches the "listening on ADDR" line of the named program. It is anchored to
// that program's name because a proxy passes its upstream's log through, and the upstream
// logs a "listening on" line of its own first.
func listeningLine(program string) *regexp.Regexp {
	return regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(program) + `: listening on (\S+)`)
}

// startServer starts argv pinned to cpu (a taskset list; "" for none) and waits for the line
// "PROGRAM: listening on ADDR". env is added to the harness's environment.
func startServer(ctx context.Context, name, program, root, cpu string, argv []string, env []string) (*server, error) {
	s, exited, err := launch(name, root, cpu, argv, env)
	if err != nil {
		return nil, err
	}
	m, err := s.log.waitFor(ctx, listeningLine(program), exited)
	if err != nil {
		s.stop()
		return nil, fmt.Errorf("%s: %v\n%s", name, err, s.log.String())
	}
	s.addr = m[1]
	return s, nil
}

// launch starts argv pinned to cpu, in a process group of its own, its output collected;
// exited closes when it ends.
func launch(name, root, cpu string, argv, env []string) (*server, <-chan struct{}, error) {
	if cpu != "" {
		argv = append([]string{"taskset", "-c", cpu}, argv...)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), env...)
	lb := newLogBuffer()
	cmd.Stdout, cmd.Stderr = lb, lb
	// A group of its own, so stopping it also stops the workers and upstreams it started.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, nil, fmt.Errorf("%s: %v", name, err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	return &server{name: name, cmd: cmd, log: lb}, exited, nil
}

// startListener starts a server that logs no "listening on" line of ours (a peer run as its
// users run it: uvicorn, gunicorn): it gives the server a free loopback port in $PORT and
// waits until that port accepts connections, the server's own signal that it serves, as
// cmd/http-proxy waits for its upstream.
func startListener(ctx context.Context, name, root, cpu string, argv, env []string) (*server, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	addr := ln.Addr().String()
	ln.Close()
	_, port, _ := net.SplitHostPort(addr)
	s, exited, err := launch(name, root, cpu, argv, append(slices.Clone(env), "PORT="+port))
	if err != nil {
		return nil, err
	}
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			s.addr = addr
			return s, nil
		}
		select {
		case <-exited:
			return nil, fmt.Errorf("%s: exited before accepting on %s\n%s", name, addr, s.log.String())
		case <-ctx.Done():
			s.stop()
			return nil, fmt.Errorf("%s: not accepting on %s: %v\n%s", name, addr, ctx.Err(), s.log.String())
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// waitReady polls the watchdog's /_/ready until every worker has passed its handshake.
func (s *server) waitReady(ctx context.Context) error {
	for {
		resp, err := http.Get("http://" + s.addr + "/_/ready")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: not ready: %v\n%s", s.name, ctx.Err(), s.log.String())
		case <-time.After(10 * time.Millisecond):
		}
	}
}

func (s *server) url() string { return "http://" + s.addr + "/" }

// stop terminates the process group: SIGTERM, then SIGKILL after a grace period.
func (s *server) stop() {
	pgid := s.cmd.Process.Pid
	syscall.Kill(-pgid, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		for {
			if syscall.Kill(-pgid, 0) != nil {
				close(done)
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		syscall.Kill(-pgid, syscall.SIGKILL)
	}
}

// logBuffer collects a process's output and lets the harness wait for a line.
type logBuffer struct {
	mu      sync.Mutex
	buf     strings.Builder
	changed chan struct{}
}

func newLogBuffer() *logBuffer { return &logBuffer{changed: make(chan struct{})} }

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.buf.Len() < 1<<20 { // keep the start, where the interesting lines are
		b.buf.Write(p)
	}
	close(b.changed)
	b.changed = make(chan struct{})
	return len(p), nil
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func (b *logBuffer) waitFor(ctx context.Context, re *regexp.Regexp, exited <-chan struct{}) ([]string, error) {
	for {
		b.mu.Lock()
		m := re.FindStringSubmatch(b.buf.String())
		changed := b.changed
		b.mu.Unlock()
		if m != nil {
			return m, nil
		}
		select {
		case <-changed:
		case <-exited:
			return nil, fmt.Errorf("exited before logging %q", re)
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

var _ io.Writer = (*logBuffer)(nil)
