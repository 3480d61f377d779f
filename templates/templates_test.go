package templates

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The test runs from templates/ (go test sets the working directory to the package's).
// make test-templates passes the watchdog binary and the directory of its native stand-ins
// for the registries' packages (a venv holding python/ in editable mode, pytest).
var (
	repoRoot, _ = filepath.Abs("..")
	watchdogBin = os.Getenv("AFTERBURN_WATCHDOG")
	buildDir    = os.Getenv("TEMPLATES_BUILD")
)

// A template under test: how to lay out the image's working directory natively.
type template struct {
	name string
	// stage installs the library from this repository into dir (laid out like the image's
	// WORKDIR, the template's files already copied in), builds the function and runs its
	// tests with the command tests, in dir/function or dir as the Dockerfile does.
	stage func(t *testing.T, dir, tests string)
	// tests is the command that runs the skeleton's unit test, exactly as a RUN line of the
	// Dockerfile has it: the test runs it and fails when the Dockerfile no longer does.
	tests string
}

var templates = []template{
	{name: "python3-afterburn", stage: stagePython, tests: "python -m pytest -q -p no:cacheprovider function"},
	{name: "node-afterburn", stage: stageNode, tests: "npm test"},
	{name: "java-afterburn", stage: stageJava, tests: `mvn -B -Dstyle.color=never -Dafterburn.version="${AFTERBURN_RUNTIME_VERSION}" -DskipTests="$skip" package`},
	{name: "go-afterburn", stage: stageGo, tests: "go test handler/function/..."},
}

func TestTemplates(t *testing.T) {
	if watchdogBin == "" || buildDir == "" {
		t.Skip("AFTERBURN_WATCHDOG and TEMPLATES_BUILD unset: run `make test-templates` from the repository root")
	}
	for _, tp := range templates {
		t.Run(tp.name, func(t *testing.T) {
			t.Parallel()
			testTemplate(t, tp)
		})
	}
}

func testTemplate(t *testing.T, tp template) {
	src := filepath.Join(repoRoot, "templates", tp.name)
	df, err := readDockerfile(filepath.Join(src, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	argv, image := checkImage(t, df, src, tp)

	dir := t.TempDir()
	copyTree(t, src, dir)
	start := time.Now()
	tp.stage(t, dir, tp.tests)
	t.Logf("staged, built and unit-tested in %v", time.Since(start).Round(time.Millisecond))

	// The watchdog as the image's CMD runs it: the Dockerfile's environment, with the
	// image's WORKDIR mapped to dir, on a free loopback port (port=0; the log names it), and
	// /metrics on another (metrics_port=0: the default, 8081, may be taken by another test).
	env := os.Environ()
	for _, kv := range image.env {
		env = append(env, kv[0]+"="+strings.ReplaceAll(kv[1], image.workdir, dir))
	}
	env = append(env, "port=0", "metrics_port=0", "listen_host=127.0.0.1")
	wd := startWatchdog(t, dir, env, argv[1:])
	defer wd.kill()
	addr := wd.waitLine(t, regexp.MustCompile(`listening on (\S+)$`))[1]
	base := "http://" + addr
	ready := time.Now()
	wd.waitReady(t, base, image.workers)
	t.Logf("/_/ready 200 with %d idle workers after %v", image.workers, time.Since(ready).Round(time.Millisecond))

	smoke(t, wd, base)

	// The HEALTHCHECK command itself, with the port the watchdog listens on.
	_, port, _ := strings.Cut(addr, ":")
	hc := exec.Command(image.healthcheck[0], image.healthcheck[1:]...)
	hc.Dir, hc.Env = dir, append(env, "port="+port)
	if out, err := runTimeout(hc, 20*time.Second); err != nil {
		t.Errorf("HEALTHCHECK %q: %v\n%s\nwatchdog log:\n%s", image.healthcheck, err, out, wd.log())
	}

	// A clean stop: SIGTERM ends every worker with status 0, then the watchdog, 0 too.
	wd.cmd.Process.Signal(syscall.SIGTERM)
	if err := wd.wait(30 * time.Second); err != nil {
		t.Fatalf("after SIGTERM: %v; want exit status 0\nwatchdog log:\n%s", err, wd.log())
	}
	log := wd.log()
	stopped := regexp.MustCompile(`(?m)w\d+ pid \d+ stopped: (.*)$`).FindAllStringSubmatch(log, -1)
	if len(stopped) != image.workers {
		t.Errorf("%d workers stopped after SIGTERM; want %d\nlog:\n%s", len(stopped), image.workers, log)
	}
	for _, m := range stopped {
		if m[1] != "exit status 0" {
			t.Errorf("a worker stopped with %q; want exit status 0\nlog:\n%s", m[1], log)
		}
	}
	if strings.Contains(log, " replaced: ") {
		t.Errorf("a worker was replaced during the smoke test; log:\n%s", log)
	}
	// The handler's print of every request reached the log, tagged as the worker's stdout.
	for _, id := range wd.ids {
		if !strings.Contains(log, "stdout: GET / (request "+id+")") {
			t.Errorf("log has no line %q from the handler's print; log:\n%s", "stdout: GET / (request "+id+")", log)
		}
	}
	if !t.Failed() {
		t.Logf("smoke passed: %d requests answered exactly, the handler's prints in the log, /_/health 200, HEALTHCHECK exit 0, %d workers and the watchdog exited 0 on SIGTERM",
			wd.sent, len(stopped))
	}
}

// image is what the test reads from the final stage.
type image struct {
	workdir     string
	workers     int // the Dockerfile's ENV workers
	env         [][2]string
	healthcheck []string
}

// checkImage checks the Dockerfile against the template's conventions and returns the CMD.
func checkImage(t *testing.T, df *dockerfile, src string, tp template) ([]string, image) {
	t.Helper()
	var im image
	if !strings.Contains(df.runs(), tp.tests) {
		t.Errorf("%s: no RUN line runs the function's tests with %q (the command this test runs)", df.path, tp.tests)
	}
	if from := df.stages[0][0].args; !strings.HasSuffix(from, " AS watchdog") || !strings.Contains(from, "${WATCHDOG_VERSION}") {
		t.Errorf("%s: first stage FROM %s; want the watchdog image, versioned by ARG, AS watchdog", df.path, from)
	}
	if len(df.stages) < 3 {
		t.Errorf("%s: %d stages; want watchdog, build and the function image", df.path, len(df.stages))
	}
	var watchdogPath string
	for _, in := range df.all("COPY") {
		if f := strings.Fields(in.args); len(f) == 3 && f[0] == "--from=watchdog" && f[1] == "/afterburn-watchdog" {
			watchdogPath = f[2]
		}
	}
	if watchdogPath == "" {
		t.Fatalf("%s: the final stage has no COPY --from=watchdog /afterburn-watchdog DEST", df.path)
	}
	cmd, ok := df.last("CMD")
	if !ok || !strings.HasPrefix(cmd.args, "[") {
		t.Fatalf("%s: the final stage needs a CMD in exec form", df.path)
	}
	argv, err := execForm(cmd.args)
	if err != nil {
		t.Fatal(err)
	}
	if argv[0] != watchdogPath && (argv[0] != path.Base(watchdogPath) || !strings.HasSuffix(path.Dir(watchdogPath), "/bin")) {
		t.Fatalf("%s: CMD %q does not run the watchdog copied to %s", df.path, argv, watchdogPath)
	}
	if user, ok := df.last("USER"); !ok || strings.HasPrefix(user.args, "root") || strings.HasPrefix(user.args, "0") {
		t.Errorf("%s: the final stage runs as %q; want a non-root USER", df.path, user.args)
	}
	workdir, ok := df.last("WORKDIR")
	if !ok {
		t.Fatalf("%s: the final stage has no WORKDIR", df.path)
	}
	im.workdir = workdir.args
	base := map[string]string{"PATH": os.Getenv("PATH")}
	if im.env, err = df.env(base); err != nil {
		t.Fatal(err)
	}
	var fprocess string
	for _, kv := range im.env {
		switch kv[0] {
		case "fprocess":
			fprocess = kv[1]
		case "workers":
			im.workers, _ = strconv.Atoi(kv[1])
		}
	}
	if im.workers < 1 {
		t.Fatalf("%s: ENV workers not set to a number of workers (the default, the CPU count, is no template default)", df.path)
	}
	if fprocess == "" && len(argv) == 1 {
		t.Fatalf("%s: no ENV fprocess and no command after -- in CMD", df.path)
	}
	if im.healthcheck, err = df.healthcheck(); err != nil {
		t.Fatal(err)
	}
	// The image's watchdog probes itself: here that is the watchdog under test.
	if hc := im.healthcheck[0]; hc == watchdogPath || hc == path.Base(watchdogPath) {
		im.healthcheck[0] = watchdogBin
	}
	// template.yml tells faas-cli the same fprocess.
	yml, err := os.ReadFile(filepath.Join(src, "template.yml"))
	if err != nil {
		t.Fatal(err)
	}
	if got := yamlField(yml, "language"); got != tp.name {
		t.Errorf("template.yml: language %q; want %q", got, tp.name)
	}
	if got := yamlField(yml, "fprocess"); got != fprocess {
		t.Errorf("template.yml: fprocess %q; the Dockerfile's ENV fprocess is %q", got, fprocess)
	}
	return argv, im
}

// yamlField is the value of a top-level scalar field of template.yml ("" when absent).
func yamlField(yml []byte, name string) string {
	m := regexp.MustCompile(`(?m)^` + name + `: (.+)$`).FindSubmatch(yml)
	if m == nil {
		return ""
	}
	return strings.TrimSpace(string(m[1]))
}

// smoke sends the requests the skeleton answers, several per worker over keep-alive
// connections: the handler prints on every request, so any print reaching the protocol
// would corrupt one of these responses.
func smoke(t *testing.T, wd *watchdog, base string) {
	t.Helper()
	client := &http.Client{Timeout: 20 * time.Second}
	do := func(method, target, contentType string, body []byte) (*http.Response, []byte) {
		req, _ := http.NewRequest(method, base+target, bytes.NewReader(body))
		if contentType != "" {
			req.Header.Set("Content-Type", contentType)
		}
		wd.sent++
		id := fmt.Sprintf("smoke-%s-%d", strings.ToLower(method), wd.sent)
		req.Header.Set("X-Request-Id", id)
		if method == "GET" {
			wd.ids = append(wd.ids, id)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v\nwatchdog log:\n%s", method, target, err, wd.log())
		}
		defer resp.Body.Close()
		got, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatalf("%s %s: reading the body: %v\nwatchdog log:\n%s", method, target, err, wd.log())
		}
		if rid := resp.Header.Get("AfterBurn-Request-Id"); rid != id {
			t.Errorf("%s %s: AfterBurn-Request-Id %q; want %q", method, target, rid, id)
		}
		return resp, got
	}
	check := func(what string, resp *http.Response, body []byte, wantType string, want []byte) {
		t.Helper()
		if resp.StatusCode != 200 || !bytes.Equal(body, want) || resp.Header.Get("Content-Type") != wantType {
			t.Errorf("%s: got %d %q %.200q; want 200 %q %.200q\nwatchdog log:\n%s",
				what, resp.StatusCode, resp.Header.Get("Content-Type"), body, wantType, want, wd.log())
		}
	}
	for i := range 8 {
		name := fmt.Sprintf("Ada%d", i)
		resp, body := do("GET", "/?name="+name, "", nil)
		check("GET /?name="+name, resp, body, "text/plain; charset=utf-8", []byte("Hello, "+name+"!\n"))
		resp, body = do("POST", "/", "application/json", []byte(`{"n":`+fmt.Sprint(i)+`}`))
		check("POST / (JSON)", resp, body, "application/json", []byte(`{"n":`+fmt.Sprint(i)+`}`))
	}
	big := make([]byte, 256<<10)
	rand.Read(big)
	resp, body := do("POST", "/", "application/octet-stream", big)
	check("POST / (256 KiB)", resp, body, "application/octet-stream", big)
	resp, body = do("GET", "/", "", nil)
	check("GET /", resp, body, "text/plain; charset=utf-8", []byte("Hello, world!\n"))

	hresp, err := client.Get(base + "/_/health")
	if err != nil {
		t.Fatalf("GET /_/health: %v", err)
	}
	hresp.Body.Close()
	if hresp.StatusCode != 200 {
		t.Errorf("GET /_/health: %d; want 200", hresp.StatusCode)
	}
}

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
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir, cmd.Env = dir, append(os.Environ(), env...)
	start := time.Now()
	out, err := runTimeout(cmd, 5*time.Minute)
	if err != nil {
		t.Fatalf("in %s: %s: %v\n%s", dir, strings.Join(argv, " "), err, out)
	}
	t.Logf("%s (%v)", strings.Join(argv, " "), time.Since(start).Round(time.Millisecond))
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
// function's handler into function/, the skeleton here).
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
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
