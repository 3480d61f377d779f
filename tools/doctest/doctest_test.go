package main

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The test binary doubles as the server of serve blocks (DOCTEST_TEST_ROLE=
// server PORT PATH) and as the command itself (DOCTEST_TEST_ROLE=main).
func TestMain(m *testing.M) {
	switch os.Getenv("DOCTEST_TEST_ROLE") {
	case "server":
		testServer(os.Args[1], os.Args[2])
		return
	case "main":
		os.Args = append([]string{"doctest"}, os.Args[1:]...)
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// testServer answers 200 on path once it is listening; on SIGTERM it writes
// the file named by DOCTEST_TEST_STOPPED and exits.
func testServer(port, path string) {
	ln, err := net.Listen("tcp", "127.0.0.1:"+port)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM)
	go http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != path {
			http.NotFound(w, r)
		}
	}))
	<-term
	os.WriteFile(os.Getenv("DOCTEST_TEST_STOPPED"), []byte("stopped"), 0o600)
	os.Exit(0)
}

func testOptions() options {
	return options{root: "testdata", timeout: 10 * time.Second, readyTimeout: 10 * time.Second, stopGrace: 5 * time.Second}
}

// run runs the given Markdown text as a file and returns the report.
func run(t *testing.T, o options, md string) (summary, string) {
	t.Helper()
	file := filepath.Join(t.TempDir(), "README.md")
	os.WriteFile(file, []byte(md), 0o600)
	var out strings.Builder
	sum := runFiles([]string{file}, o, &out)
	return sum, strings.ReplaceAll(out.String(), file, "README.md")
}

func TestParseBlocks(t *testing.T) {
	src := "text\n```sh\necho 1\n```\n" +
		"````sh serve=8080 ready=/\nrun ```\n````\n" +
		"  ~~~ sh skip=\"needs Docker\"\n  docker build .\n    indented\n  ~~~\n" +
		"```go\nfunc f() {}\n```\n" +
		"``` `inline` ```\n" +
		"```\nplain\n```\n"
	blocks, err := parseBlocks("R.md", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	want := []block{
		{file: "R.md", line: 2, lang: "sh", text: "echo 1\n"},
		{file: "R.md", line: 5, lang: "sh", info: "serve=8080 ready=/", text: "run ```\n"},
		{file: "R.md", line: 8, lang: "sh", info: `skip="needs Docker"`, text: "docker build .\n  indented\n"},
		{file: "R.md", line: 12, lang: "go", text: "func f() {}\n"},
		{file: "R.md", line: 16, lang: "", text: "plain\n"},
	}
	if fmt.Sprint(blocks) != fmt.Sprint(want) {
		t.Errorf("got  %+v\nwant %+v", blocks, want)
	}
	if _, err := parseBlocks("R.md", []byte("a\n```sh\necho 1\n")); err == nil || !strings.Contains(err.Error(), "R.md:2: the code block is not closed") {
		t.Errorf("unclosed fence: %v; want R.md:2: the code block is not closed", err)
	}
}

func TestParseAttrs(t *testing.T) {
	for _, tc := range []struct {
		info, want string
	}{
		{``, `map[]`},
		{`skip="needs the package published on PyPI"`, `map[skip:needs the package published on PyPI]`},
		{`serve=8080  ready=/`, `map[ready:/ serve:8080]`},
		{`serve=8080 serve=8081`, `error`},
		{`skip="unclosed`, `error`},
		{`bare`, `error`},
	} {
		attrs, err := parseAttrs(tc.info)
		got := fmt.Sprint(attrs)
		if err != nil {
			got = "error"
		}
		if got != tc.want {
			t.Errorf("parseAttrs(%q) = %s (%v); want %s", tc.info, got, err, tc.want)
		}
	}
}

// TestFixtures: the fixture READMEs pass, fail and skip as they say, each
// block reported by its line, with the summary the Makefile prints.
func TestFixtures(t *testing.T) {
	var out strings.Builder
	o := testOptions()
	sum := runFiles([]string{"testdata/pass.md", "testdata/fail.md", "testdata/skip.md", "testdata/missing.md"}, o, &out)
	report := out.String()
	for _, want := range []string{
		`(?m)^PASS testdata/pass.md:5 \(`,
		`(?m)^PASS testdata/pass.md:22 \(`,
		`(?m)^FAIL testdata/fail.md:3 \(.*\): exit status 1$`,
		`(?m)^    \| false$`,
		`(?m)^FAIL testdata/fail.md:10 \(.*\): exit status 1$`,
		`(?m)^FAIL testdata/fail.md:16 \(.*\): exit status 1$`,
		`DOCTEST_SURELY_UNSET_VARIABLE: unbound variable`,
		`(?m)^FAIL testdata/fail.md:22 \(.*\): unknown attribute skp=`,
		`(?m)^SKIP testdata/skip.md:3: needs the package published on PyPI$`,
		`(?m)^FAIL testdata/skip.md:10 \(.*\): skip= needs a reason`,
		`(?m)^FAIL testdata/missing.md: `,
	} {
		if !regexp.MustCompile(want).MatchString(report) {
			t.Errorf("report does not match %s:\n%s", want, report)
		}
	}
	if regexp.MustCompile(`(?m)^    not reached$`).MatchString(report) {
		t.Errorf("a block went on after a failing command (-e):\n%s", report)
	}
	if got := sum.String(); got != "2 passed, 6 failed, 1 skipped" {
		t.Errorf("summary %q; want 2 passed, 6 failed, 1 skipped\n%s", got, report)
	}
}

// freePort is a port nothing listens on, for a serve block.
func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	return port
}

// TestServe: a serve block passes once its ready path answers 200, and its
// process group is then stopped with SIGTERM; one that never gets ready, or
// ends first, fails.
func TestServe(t *testing.T) {
	t.Setenv("DOCTEST_TEST_BIN", os.Args[0])
	o := testOptions()
	o.readyTimeout = 2 * time.Second
	for _, tc := range []struct {
		name, info, path, want string
	}{
		{"ready", "serve=PORT", "/_/ready", `(?m)^PASS README.md:1 `},
		{"ready=/", "serve=PORT ready=/", "/", `(?m)^PASS README.md:1 `},
		{"never ready", "serve=PORT", "/elsewhere", `(?m)^FAIL README.md:1 .*/_/ready did not answer 200 within 2s \(last: 404 Not Found\)`},
		{"bad port", "serve=http", "/", `(?m)^FAIL README.md:1 .*want a port and a path`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			port := freePort(t)
			stopped := filepath.Join(t.TempDir(), "stopped")
			t.Setenv("DOCTEST_TEST_STOPPED", stopped)
			md := "```sh " + strings.ReplaceAll(tc.info, "PORT", port) + "\n" +
				"DOCTEST_TEST_ROLE=server \"$DOCTEST_TEST_BIN\" " + port + " " + tc.path + "\n```\n"
			_, report := run(t, o, md)
			if !regexp.MustCompile(tc.want).MatchString(report) {
				t.Fatalf("report does not match %s:\n%s", tc.want, report)
			}
			if tc.name == "bad port" {
				return
			}
			if b, _ := os.ReadFile(stopped); string(b) != "stopped" {
				t.Errorf("the server was not stopped with SIGTERM")
			}
		})
	}
	t.Run("ends first", func(t *testing.T) {
		_, report := run(t, o, "```sh serve="+freePort(t)+"\necho starting; exit 3\n```\n")
		if !regexp.MustCompile(`(?m)^FAIL README.md:1 .*the server ended \(exit status 3\) before`).MatchString(report) ||
			!strings.Contains(report, "starting") {
			t.Errorf("report:\n%s", report)
		}
	})
	t.Run("port in use", func(t *testing.T) {
		ln, _ := net.Listen("tcp", "127.0.0.1:0")
		defer ln.Close()
		go http.Serve(ln, http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
		_, port, _ := net.SplitHostPort(ln.Addr().String())
		_, report := run(t, o, "```sh serve="+port+" ready=/\nsleep 30\n```\n")
		if !strings.Contains(report, "is in use before the block started") {
			t.Errorf("report:\n%s", report)
		}
	})
}

// TestTimeout: a block past its limit fails, and what it started in the
// background is killed with it.
func TestTimeout(t *testing.T) {
	o := testOptions()
	o.timeout = 300 * time.Millisecond
	pidFile := filepath.Join(t.TempDir(), "pid")
	start := time.Now()
	_, report := run(t, o, "```sh\nsleep 30 &\necho $! > "+pidFile+"\nsleep 30\n```\n")
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("took %v; want the block stopped at its limit", took)
	}
	if !strings.Contains(report, "still running after 300ms") {
		t.Errorf("report:\n%s", report)
	}
	b, _ := os.ReadFile(pidFile)
	var pid int
	fmt.Sscan(string(b), &pid)
	if pid == 0 {
		t.Fatalf("no pid of the background sleep: %q", b)
	}
	// stop kills the block's whole process group and waits for it: by the
	// time the block is reported, the background sleep is gone.
	if err := syscall.Kill(pid, 0); err != syscall.ESRCH {
		syscall.Kill(pid, syscall.SIGKILL)
		t.Errorf("the background sleep %d outlived its block (kill 0: %v)", pid, err)
	}
}

// TestExitStatus: the command prints the summary last and exits 1 on a
// failure, 0 otherwise.
func TestExitStatus(t *testing.T) {
	for _, tc := range []struct {
		files []string
		code  int
		last  string
	}{
		{[]string{"testdata/pass.md", "testdata/skip.md"}, 1, "2 passed, 1 failed, 1 skipped"},
		{[]string{"testdata/pass.md"}, 0, "2 passed, 0 failed, 0 skipped"},
	} {
		cmd := exec.Command(os.Args[0], append([]string{"-root", "testdata"}, tc.files...)...)
		cmd.Env = append(os.Environ(), "DOCTEST_TEST_ROLE=main")
		out, _ := cmd.Output()
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		if cmd.ProcessState.ExitCode() != tc.code || lines[len(lines)-1] != tc.last {
			t.Errorf("%q: exit %d, last line %q; want %d, %q\n%s", tc.files, cmd.ProcessState.ExitCode(), lines[len(lines)-1], tc.code, tc.last, out)
		}
	}
}
