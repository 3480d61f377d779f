package main

// The test binary plays both parts: the watchdog (AFTERBURN_TEST_ROLE=
// watchdog runs main's run) and, given the argument afterburn-test-worker,
// a minimal worker.

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

const workerArg = "afterburn-test-worker"

func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == workerArg {
		runWorker()
		os.Exit(0)
	}
	if os.Getenv("AFTERBURN_TEST_ROLE") == "watchdog" {
		os.Exit(run(os.Args[1:]))
	}
	os.Exit(m.Run())
}

// runWorker answers the handshake and every request on AFTERBURN_FDS.
func runWorker() {
	in, out := os.NewFile(3, "request"), os.NewFile(4, "response")
	br, bw := bufio.NewReader(in), bufio.NewWriter(out)
	for {
		req, err := http.ReadRequest(br)
		if err == io.EOF {
			return
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "worker:", err)
			os.Exit(2)
		}
		io.Copy(io.Discard, req.Body)
		if req.Header.Get("AfterBurn-Handshake") != "" {
			bw.WriteString("HTTP/1.1 200 OK\r\nAfterBurn-Protocol: 1\r\nContent-Length: 0\r\n\r\n")
		} else {
			body := "hello from " + req.URL.Path
			fmt.Fprintf(bw, "HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
		}
		bw.Flush()
	}
}

// watchdogCmd runs the test binary as the watchdog.
func watchdogCmd(args []string, env ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), "AFTERBURN_TEST_ROLE=watchdog")
	cmd.Env = append(cmd.Env, env...)
	return cmd
}

func TestHelp(t *testing.T) {
	t.Parallel()
	out, err := watchdogCmd([]string{"--help"}).CombinedOutput()
	if err != nil {
		t.Fatalf("--help: %v\n%s", err, out)
	}
	for _, name := range []string{"port", "listen_host", "fprocess", "workers", "exec_timeout", "read_timeout",
		"write_timeout", "max_inflight", "init_timeout", "healthcheck_interval", "shutdown_timeout",
		"max_request_body", "max_header_bytes", "prefix_logs", "stdio", "handshake", "metrics_port"} {
		if !regexp.MustCompile(`(?m)^  -` + name + `\b`).Match(out) {
			t.Errorf("--help does not document %s", name)
		}
	}
}

// TestBadSettings: a setting that does not parse, by flag or by environment,
// exits 2 naming it; with log_format=json asked for it is one JSON error line
// and nothing else (PROTOCOL.md §9.5), without the usage text mode prints.
func TestBadSettings(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		env  []string
		want string
		json bool
	}{
		{[]string{"--workers=x", "--", "true"}, nil, `invalid value "x" for flag -workers`, false},
		{[]string{"true"}, []string{"exec_timeout=soon"}, `watchdog: bad environment variable exec_timeout="soon"`, false},
		{nil, nil, "watchdog: no worker command", false},
		{[]string{"--workers=x", "-log_format", "json", "--", "true"}, nil, `invalid value "x" for flag -workers`, true},
		{[]string{"--nosuch", "--", "true"}, []string{"log_format=json"}, "flag provided but not defined: -nosuch", true},
		{[]string{"true"}, []string{"exec_timeout=soon", "log_format=json"}, `watchdog: bad environment variable exec_timeout="soon"`, true},
		{[]string{"-log_format=json"}, nil, "watchdog: no worker command", true},
	} {
		cmd := watchdogCmd(tc.args, tc.env...)
		cmd.Env = append(cmd.Env, "fprocess=")
		out, err := cmd.CombinedOutput()
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 {
			t.Errorf("%q %q: %v; want exit status 2", tc.args, tc.env, err)
		}
		if !tc.json {
			if !strings.Contains(string(out), tc.want) {
				t.Errorf("%q %q: output %q; want %q", tc.args, tc.env, out, tc.want)
			}
			continue
		}
		var line struct{ Time, Level, Msg string }
		if err := json.Unmarshal(out, &line); err != nil || line.Level != "error" || line.Time == "" || !strings.Contains(line.Msg, tc.want) {
			t.Errorf("%q %q: output %q (%v); want one JSON error line with %q", tc.args, tc.env, out, err, tc.want)
		}
	}
}

// TestServeAndStop: port 0 is logged as "listening on ADDR" (the
// conformance suite reads it), requests are served, SIGTERM exits 0.
func TestServeAndStop(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		args []string
		env  []string
	}{
		// metrics_port 0: the default, 8081, could be taken (and the two
		// cases run in parallel).
		{"flags", []string{"--port=0", "--metrics_port=0", "--listen_host=127.0.0.1", "--workers=1", "--", os.Args[0], workerArg}, nil},
		{"env", nil, []string{"port=0", "metrics_port=0", "workers=1", "fprocess='" + os.Args[0] + "' " + workerArg}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cmd := watchdogCmd(tc.args, tc.env...)
			stderr, _ := cmd.StderrPipe()
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			lines := make(chan string, 100)
			var log strings.Builder
			go func() {
				sc := bufio.NewScanner(stderr)
				for sc.Scan() {
					lines <- sc.Text()
				}
				close(lines)
			}()
			// waitLine reads the watchdog's stderr up to a line matching re.
			waitLine := func(re *regexp.Regexp) []string {
				timeout := time.After(15 * time.Second)
				for {
					select {
					case l, ok := <-lines:
						if !ok {
							t.Fatalf("stderr ended before %v:\n%s", re, log.String())
						}
						log.WriteString(l + "\n")
						if m := re.FindStringSubmatch(l); m != nil {
							return m
						}
					case <-timeout:
						cmd.Process.Kill()
						t.Fatalf("no line %v:\n%s", re, log.String())
					}
				}
			}
			addr := waitLine(regexp.MustCompile(`^afterburn-watchdog: listening on (\S+)$`))[1]
			resp, err := http.Get("http://" + addr + "/hi")
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if string(b) != "hello from /hi" {
				t.Errorf("GET /hi: %d %q", resp.StatusCode, b)
			}
			// The HEALTHCHECK form, with the port the way a container has it.
			_, port, _ := strings.Cut(addr, ":")
			if out, err := watchdogCmd([]string{"healthcheck"}, "port="+port).CombinedOutput(); err != nil {
				t.Errorf("healthcheck against the running watchdog: %v\n%s", err, out)
			}
			cmd.Process.Signal(syscall.SIGTERM)
			waitLine(regexp.MustCompile(`w1 pid \d+ stopped: exit status 0$`))
			for range lines {
			}
			if err := cmd.Wait(); err != nil {
				t.Errorf("exit after SIGTERM: %v; want status 0\n%s", err, log.String())
			}
		})
	}
}

// TestHealthcheck: `afterburn-watchdog healthcheck` exits 0 only when the
// liveness path (PROTOCOL.md §9.2) answers 200, on the port the watchdog's own
// flags and environment name.
func TestHealthcheck(t *testing.T) {
	t.Parallel()
	status := http.StatusOK
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/_/health" {
			http.NotFound(w, r)
			return
		}
		w.WriteHeader(status)
	}))
	_, port, _ := strings.Cut(srv.Listener.Addr().String(), ":")
	probe := func(args []string, env ...string) (int, string) {
		var out strings.Builder
		code := healthcheck(args, func(k string) string {
			for _, kv := range env {
				if name, v, _ := strings.Cut(kv, "="); name == k {
					return v
				}
			}
			return ""
		}, &out)
		return code, out.String()
	}
	for _, tc := range []struct {
		name string
		args []string
		env  []string
	}{
		{"flag", []string{"-port", port}, nil},
		{"env port", nil, []string{"port=" + port}},
		{"Knative PORT", nil, []string{"PORT=" + port}},
		{"unspecified listen_host", nil, []string{"port=" + port, "listen_host=0.0.0.0"}},
	} {
		if code, out := probe(tc.args, tc.env...); code != 0 {
			t.Errorf("%s: exit %d (%s); want 0", tc.name, code, out)
		}
	}
	status = http.StatusServiceUnavailable
	if code, out := probe([]string{"-port", port}); code != 1 || !strings.Contains(out, "503") {
		t.Errorf("a 503: exit %d, %q; want 1 naming the status", code, out)
	}
	srv.Close()
	if code, out := probe([]string{"-port", port}); code != 1 || !strings.Contains(out, "healthcheck:") {
		t.Errorf("nothing listening: exit %d, %q; want 1 with the reason", code, out)
	}
	if code, _ := probe(nil, "port=x"); code != 2 {
		t.Errorf("a bad port: exit %d; want 2", code)
	}
}

// TestHealthcheckArgs: healthcheck is the subcommand when it is the first
// argument that is neither a flag nor a flag's value, with no -- before it;
// the flags on both sides of it are the probe's.
func TestHealthcheckArgs(t *testing.T) {
	for _, tc := range []struct {
		args  []string
		want  []string
		probe bool
	}{
		{[]string{"healthcheck"}, []string{}, true},
		{[]string{"healthcheck", "-port", "9000"}, []string{"-port", "9000"}, true},
		{[]string{"-port", "8080", "healthcheck"}, []string{"-port", "8080"}, true},
		{[]string{"-port=8080", "healthcheck", "-listen_host", "127.0.0.2"}, []string{"-port=8080", "-listen_host", "127.0.0.2"}, true},
		{[]string{"-prefix_logs=false", "-port", "1", "healthcheck"}, []string{"-prefix_logs=false", "-port", "1"}, true},
		{[]string{"--", "healthcheck"}, nil, false},
		{[]string{"-port", "8080", "--", "healthcheck"}, nil, false},
		{[]string{"-fprocess", "healthcheck"}, nil, false}, // a flag's value
		{[]string{"--", "./fn", "healthcheck"}, nil, false},
		{[]string{"./fn", "healthcheck"}, nil, false},
		{[]string{"-port", "x", "healthcheck"}, nil, false}, // the watchdog's parse reports it
	} {
		got, probe := healthcheckArgs(tc.args)
		if probe != tc.probe || (probe && strings.Join(got, " ") != strings.Join(tc.want, " ")) {
			t.Errorf("healthcheckArgs(%q) = %q, %v; want %q, %v", tc.args, got, probe, tc.want, tc.probe)
		}
	}
}

// TestHealthcheckFlagsFirst: `afterburn-watchdog -port N healthcheck` probes
// port N (issue 22: it used to run "healthcheck" as the worker command), and
// --help says how to call the subcommand.
func TestHealthcheckFlagsFirst(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/_/health" {
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	_, port, _ := strings.Cut(srv.Listener.Addr().String(), ":")
	for _, args := range [][]string{
		{"-port", port, "-listen_host", "127.0.0.1", "healthcheck"},
		{"-listen_host", "127.0.0.1", "healthcheck", "-port", port},
	} {
		cmd := watchdogCmd(args)
		done := make(chan error, 1)
		var out strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("%q: %v; want exit 0\n%s", args, err, out.String())
			}
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			t.Fatalf("%q still running after 10 s: it serves as a watchdog instead of probing\n%s", args, out.String())
		}
	}
	help, _ := watchdogCmd([]string{"--help"}).CombinedOutput()
	if !strings.Contains(string(help), "afterburn-watchdog [flags] healthcheck [flags]") {
		t.Errorf("--help does not show how to call healthcheck:\n%s", help)
	}
}

// TestStartErrorJSON: with log_format=json, why the watchdog could not start
// is a JSON line too (PROTOCOL.md §9.5), here a port already in use.
func TestStartErrorJSON(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.NotFoundHandler())
	defer srv.Close()
	_, port, _ := strings.Cut(srv.Listener.Addr().String(), ":")
	cmd := watchdogCmd([]string{"-listen_host", "127.0.0.1", "-port", port, "-metrics_port", "0", "-log_format", "json", "--", os.Args[0], workerArg})
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
		t.Fatalf("%v; want exit status 1\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	var last struct{ Time, Level, Msg string }
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &last); err != nil || last.Level != "error" || !strings.Contains(last.Msg, "address already in use") || last.Time == "" {
		t.Errorf("last line %q (%v); want a JSON error line naming the address in use\n%s", lines[len(lines)-1], err, out)
	}
	for _, line := range lines {
		if !json.Valid([]byte(line)) {
			t.Errorf("line %q is not JSON", line)
		}
	}
}
