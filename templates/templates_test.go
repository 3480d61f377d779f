package templates

import (
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The test runs from templates/ (go test sets the working directory to the package's).
// make test-templates passes the watchdog binary and the directory of its native stand-ins
// for the registries' packages (a venv holding python/ in editable mode, pytest); make
// test-templates-dist passes dist/'s watchdog and TEMPLATES_MODE=dist (stage_test.go).
var (
	repoRoot, _ = filepath.Abs("..")
	watchdogBin = os.Getenv("AFTERBURN_WATCHDOG")
	buildDir    = os.Getenv("TEMPLATES_BUILD")
)

// A template under test: how to lay out the image's working directory natively, and what
// its function answers.
type template struct {
	name string
	// stage installs the library into dir (laid out like the image's WORKDIR, the template's
	// files already copied in: from this repository, or in dist mode from packages/ by the
	// Dockerfile's own RUN line), builds the function and runs its tests with the command
	// tests, in dir/function or dir as the Dockerfile does (stage_test.go).
	stage func(t *testing.T, dir, tests string)
	// tests is the command that runs the skeleton's unit test, exactly as a RUN line of the
	// Dockerfile has it: the test runs it and fails when the Dockerfile no longer does.
	tests string
	// install is the command that installs the library from packages/, which the RUN line
	// right after the build stage's COPY packages/ must hold (README.md, "Building from a
	// checkout"); dist mode runs that whole line.
	install string
	// runs are other commands the Dockerfile's RUN lines must hold, because stage does them.
	runs []string
	// answers sends the function's requests and checks its answers; nil: the skeleton's (smoke).
	answers func(t *testing.T, wd *watchdog, base string)
	// pinned files of a template that carries a function over from another platform's
	// template: their SHA-256 (hex), which must not change (answers_test.go).
	pinned map[string]string
}

// The command of each language's install from packages/ (see each Dockerfile).
const (
	pythonInstall = `pip install --no-cache-dir --no-index --find-links packages "afterburn-runtime==${AFTERBURN_RUNTIME_VERSION}"`
	nodeInstall   = `npm install --omit=dev --save-exact "./packages/afterburn-runtime-${AFTERBURN_RUNTIME_VERSION}.tgz"`
	javaInstall   = `mvn -B -q org.apache.maven.plugins:maven-install-plugin:3.1.4:install-file -Dfile="${pom%.pom}.jar" -DpomFile="$pom"`
	goInstall     = `GOPROXY="file://$PWD/packages/goproxy,$(go env GOPROXY)" GONOSUMDB=github.com/afterburn-dev/afterburn`

	pythonTests = "python -m pytest -q -p no:cacheprovider function"
	javaTests   = `mvn -B -Dstyle.color=never -Dafterburn.version="${AFTERBURN_RUNTIME_VERSION}" -DskipTests="$skip" package`
	goTests     = "go test handler/function/..."
)

var templates = []template{
	{name: "python3-afterburn", stage: stagePython, tests: pythonTests, install: pythonInstall},
	{name: "python3-http-afterburn", stage: stagePython3HTTP, tests: pythonTests, install: pythonInstall,
		runs: []string{"touch function/__init__.py"}, answers: answersPython3HTTP, pinned: python3HTTPPinned},
	{name: "node-afterburn", stage: stageNode, tests: "npm test", install: nodeInstall},
	{name: "node20-afterburn", stage: stageNode, tests: "npm test", install: nodeInstall,
		answers: answersNode20, pinned: node20Pinned},
	{name: "java-afterburn", stage: stageJava, tests: javaTests, install: javaInstall},
	{name: "java11-afterburn", stage: stageJava, tests: javaTests, install: javaInstall,
		answers: answersJava11, pinned: java11Pinned},
	{name: "go-afterburn", stage: stageGo, tests: goTests, install: goInstall},
	{name: "golang-http-afterburn", stage: stageGo, tests: goTests, install: goInstall,
		answers: answersGolangHTTP, pinned: golangHTTPPinned},
}

// TestPinnedFiles needs no build: a carried-over function's files are the original's.
func TestPinnedFiles(t *testing.T) {
	for _, tp := range templates {
		for file, want := range tp.pinned {
			b, err := os.ReadFile(filepath.Join(tp.name, filepath.FromSlash(file)))
			if err != nil {
				t.Error(err)
				continue
			}
			if sum := sha256.Sum256(b); hex.EncodeToString(sum[:]) != want {
				t.Errorf("%s/%s is no longer the original's byte for byte (sha256 %x; want %s)", tp.name, file, sum, want)
			}
		}
	}
}

func TestTemplates(t *testing.T) {
	if watchdogBin == "" || buildDir == "" {
		t.Skip("AFTERBURN_WATCHDOG and TEMPLATES_BUILD unset: run `make test-templates` from the repository root")
	}
	if distMode && distVersion == "" {
		t.Fatal("TEMPLATES_MODE=dist without TEMPLATES_VERSION: run `make test-templates-dist`")
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
	mode := "the library from this source tree"
	if distMode {
		mode = "the library from packages/ (make template-packages), the watchdog from dist/"
	}
	t.Logf("staged, built and unit-tested in %v, %s", time.Since(start).Round(time.Millisecond), mode)

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

	answers := tp.answers
	if answers == nil {
		answers = smoke
	}
	answers(t, wd, base)
	hresp, err := http.Get(base + "/_/health")
	if err != nil {
		t.Fatalf("GET /_/health: %v", err)
	}
	hresp.Body.Close()
	if hresp.StatusCode != 200 {
		t.Errorf("GET /_/health: %d; want 200", hresp.StatusCode)
	}

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
	// The handler's print of every request that asked for one (the skeletons print each
	// GET) reached the log, tagged as the worker's stdout.
	for _, id := range wd.ids {
		if !strings.Contains(log, "stdout: GET / (request "+id+")") {
			t.Errorf("log has no line %q from the handler's print; log:\n%s", "stdout: GET / (request "+id+")", log)
		}
	}
	if !t.Failed() {
		t.Logf("smoke passed: %d requests answered exactly, /_/health 200, HEALTHCHECK exit 0, %d workers and the watchdog exited 0 on SIGTERM",
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
	for _, c := range tp.runs {
		if !strings.Contains(df.runs(), c) {
			t.Errorf("%s: no RUN line runs %q, which this test does", df.path, c)
		}
	}
	// The library from packages/ when make template-packages filled it, else the registry.
	if step, err := df.packages(); err != nil {
		t.Error(err)
	} else if tp.install == "" || !strings.Contains(step.run.args, tp.install) {
		t.Errorf("%s:%d: the RUN line after COPY packages/ does not install the library from packages/ with %q", df.path, step.run.line, tp.install)
	}
	if _, err := os.Stat(filepath.Join(src, "packages", "README.md")); err != nil {
		t.Errorf("%s: no packages/README.md: the build context needs packages/ even when it is empty", src)
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
