package templates

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// python3-http-afterburn (issue 32, PROTOCOL.md §13): a handler written for OpenFaaS's
// python3-http template runs unchanged. Its handler.py is that template's default handler
// byte for byte (openfaas/python-flask-template, template/python3-http/function/handler.py),
// so the smoke test here is its own: the shared one in templates_test.go asks for the
// python3-afterburn skeleton's answers.
const python3HTTPHandlerSHA256 = "2f9afefde9339e4730f8d924aa5006bac14c9ede8d65aa646d8122cd482633ee"

var python3HTTP = template{
	name:  "python3-http-afterburn",
	stage: stagePython3HTTP,
	tests: "python -m pytest -q -p no:cacheprovider function",
}

// stagePython3HTTP stages as the Dockerfile builds: function/ made a package (as python3-http
// does), then the venv, the function's requirements and its tests as for python3-afterburn.
func stagePython3HTTP(t *testing.T, dir, tests string) {
	if err := os.WriteFile(filepath.Join(dir, "function", "__init__.py"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	stagePython(t, dir, tests)
}

func TestPython3HTTPTemplate(t *testing.T) {
	src := filepath.Join(repoRoot, "templates", python3HTTP.name)
	handler, err := os.ReadFile(filepath.Join(src, "function", "handler.py"))
	if err != nil {
		t.Fatal(err)
	}
	if sum := sha256.Sum256(handler); hex.EncodeToString(sum[:]) != python3HTTPHandlerSHA256 {
		t.Errorf("function/handler.py is no longer python3-http's default handler byte for byte (sha256 %x)", sum)
	}
	if watchdogBin == "" || buildDir == "" {
		t.Skip("AFTERBURN_WATCHDOG and TEMPLATES_BUILD unset: run `make test-templates` from the repository root")
	}
	t.Parallel()
	df, err := readDockerfile(filepath.Join(src, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(df.runs(), "touch function/__init__.py") {
		t.Errorf("%s: no RUN line makes function/ a package (touch function/__init__.py), which this test stages", df.path)
	}
	argv, image := checkImage(t, df, src, python3HTTP)
	dir := t.TempDir()
	copyTree(t, src, dir)
	start := time.Now()
	python3HTTP.stage(t, dir, python3HTTP.tests)
	t.Logf("staged, built and unit-tested in %v", time.Since(start).Round(time.Millisecond))

	env := os.Environ()
	for _, kv := range image.env {
		env = append(env, kv[0]+"="+strings.ReplaceAll(kv[1], image.workdir, dir))
	}
	env = append(env, "port=0", "metrics_port=0", "listen_host=127.0.0.1")
	wd := startWatchdog(t, dir, env, argv[1:])
	defer wd.kill()
	addr := wd.waitLine(t, regexp.MustCompile(`listening on (\S+)$`))[1]
	base := "http://" + addr
	wd.waitReady(t, base, image.workers)

	// What python3-http answers for its default handler, on any path and method, over
	// kept-alive connections: Flask's text/html for a str body.
	client := &http.Client{Timeout: 20 * time.Second}
	for i, m := range []string{"GET", "POST", "PUT", "GET", "DELETE", "PATCH", "GET", "POST"} {
		req, _ := http.NewRequest(m, base+"/some/path?i="+strconv.Itoa(i), strings.NewReader("body"))
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("%s: %v\nwatchdog log:\n%s", m, err, wd.log())
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		wd.sent++
		if resp.StatusCode != 200 || string(body) != "Hello from OpenFaaS!" || resp.Header.Get("Content-Type") != "text/html; charset=utf-8" {
			t.Errorf("%s: got %d %q %q; want 200 %q %q\nwatchdog log:\n%s", m, resp.StatusCode,
				resp.Header.Get("Content-Type"), body, "text/html; charset=utf-8", "Hello from OpenFaaS!", wd.log())
		}
	}

	_, port, _ := strings.Cut(addr, ":")
	hc := exec.Command(image.healthcheck[0], image.healthcheck[1:]...)
	hc.Dir, hc.Env = dir, append(env, "port="+port)
	if out, err := runTimeout(hc, 20*time.Second); err != nil {
		t.Errorf("HEALTHCHECK %q: %v\n%s\nwatchdog log:\n%s", image.healthcheck, err, out, wd.log())
	}
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
	if !t.Failed() {
		t.Logf("smoke passed: %d requests answered as python3-http answers them, HEALTHCHECK exit 0, %d workers and the watchdog exited 0 on SIGTERM",
			wd.sent, len(stopped))
	}
}
