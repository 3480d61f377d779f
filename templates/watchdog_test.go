package templates

// The watchdog under test as a process (its log, its readiness, its stop), and the helpers
// that run the build's commands.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// ---- the watchdog process ---------------------------------------------------------------

type watchdog struct {
	cmd   *exec.Cmd
	lines chan string
	done  chan error
	mu    sync.Mutex
	buf   strings.Builder
	ids   []string // request ids of the GETs sent, whose prints the log must show
	sent  int      // requests sent to the function
}

func startWatchdog(t *testing.T, dir string, env, args []string) *watchdog {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	wd := &watchdog{lines: make(chan string, 1024), done: make(chan error, 1)}
	wd.cmd = exec.Command(watchdogBin, args...)
	wd.cmd.Dir, wd.cmd.Env = dir, env
	wd.cmd.Stdout, wd.cmd.Stderr = w, w
	if err := wd.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	scanned := make(chan struct{})
	go func() {
		defer close(scanned)
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			wd.mu.Lock()
			wd.buf.WriteString(sc.Text() + "\n")
			wd.mu.Unlock()
			select {
			case wd.lines <- sc.Text():
			default: // nobody waits for lines any more
			}
		}
	}()
	go func() {
		err := wd.cmd.Wait()
		<-scanned // the whole log, workers' last lines included
		wd.done <- err
	}()
	return wd
}

func (wd *watchdog) log() string {
	wd.mu.Lock()
	defer wd.mu.Unlock()
	return wd.buf.String()
}

// waitLine reads the log up to a line matching re.
func (wd *watchdog) waitLine(t *testing.T, re *regexp.Regexp) []string {
	t.Helper()
	timeout := time.After(30 * time.Second)
	for {
		select {
		case l := <-wd.lines:
			if m := re.FindStringSubmatch(l); m != nil {
				return m
			}
		case err := <-wd.done:
			t.Fatalf("the watchdog exited (%v) before a line %v; log:\n%s", err, re, wd.log())
		case <-timeout:
			t.Fatalf("no line %v in 30s; log:\n%s", re, wd.log())
		}
	}
}

// waitReady polls /_/ready, the watchdog's own signal (never a fixed sleep), until it
// answers 200 with every one of the workers idle: each has run its start-up code.
func (wd *watchdog) waitReady(t *testing.T, base string, workers int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	last := ""
	for {
		req, _ := http.NewRequestWithContext(ctx, "GET", base+"/_/ready", nil)
		resp, err := client.Do(req)
		if err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			var st struct{ Idle, Starting int }
			if resp.StatusCode == 200 && json.Unmarshal(b, &st) == nil && st.Idle == workers {
				return
			}
			last = fmt.Sprintf("%d %s", resp.StatusCode, b)
		} else {
			last = err.Error()
		}
		select {
		case <-ctx.Done():
			t.Fatalf("/_/ready not 200 with %d idle workers within 60s; last: %s\nlog:\n%s", workers, last, wd.log())
		case err := <-wd.done:
			t.Fatalf("the watchdog exited (%v) before /_/ready; log:\n%s", err, wd.log())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func (wd *watchdog) wait(timeout time.Duration) error {
	select {
	case err := <-wd.done:
		wd.done <- err // for kill
		return err
	case <-time.After(timeout):
		return fmt.Errorf("still running after %v", timeout)
	}
}

func (wd *watchdog) kill() {
	select {
	case err := <-wd.done:
		wd.done <- err
	default:
		wd.cmd.Process.Kill()
	}
}

// ---- helpers ----------------------------------------------------------------------------

// run runs argv in dir with env added to the test's, and fails the test with the output.
func run(t *testing.T, dir string, env []string, argv ...string) {
	t.Helper()
	cmd := command(dir, env, argv...)
	start := time.Now()
	out, err := runTimeout(cmd, 5*time.Minute)
	if err != nil {
		t.Fatalf("in %s: %s: %v\n%s", dir, strings.Join(argv, " "), err, out)
	}
	t.Logf("%s (%v)", strings.Join(argv, " "), time.Since(start).Round(time.Millisecond))
}

// command is exec.Command with env added to the test's, argv[0] looked up in env's PATH when
// env sets one (exec.Command looks in the test's own: python would not be the venv's).
func command(dir string, env []string, argv ...string) *exec.Cmd {
	name := argv[0]
	for _, kv := range env {
		if p, ok := strings.CutPrefix(kv, "PATH="); ok && !strings.Contains(name, "/") {
			for _, d := range filepath.SplitList(p) {
				if fi, err := os.Stat(filepath.Join(d, argv[0])); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
					name = filepath.Join(d, argv[0])
					break
				}
			}
		}
	}
	cmd := exec.Command(name, argv[1:]...)
	cmd.Dir, cmd.Env = dir, append(os.Environ(), env...)
	return cmd
}

func runTimeout(cmd *exec.Cmd, timeout time.Duration) ([]byte, error) {
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	timer := time.AfterFunc(timeout, func() { cmd.Process.Kill() })
	defer timer.Stop()
	err := cmd.Wait()
	return out.Bytes(), err
}

// copyTree copies the template directory as the build context (faas-cli copies it, and the
// function's handler into function/, the skeleton here). packages/ comes with it in dist mode
// only: a source-mode build context has nothing in it but its README.md, whatever
// make template-packages last put there.
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if !distMode && strings.HasPrefix(rel, "packages"+string(filepath.Separator)) && rel != filepath.Join("packages", "README.md") {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

func symlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}
