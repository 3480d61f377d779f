package templates

// node20-afterburn: OpenFaaS's node20 handler.js, byte for byte, served by the watchdog
// through the Node library's OpenFaaS adapter (PROTOCOL.md §13). Staged natively as the
// other templates are (templates_test.go); its skeleton answers its own way, so this test
// sends its own requests instead of the shared smoke test's.

import (
	"bytes"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The node20 template's function/handler.js, as published in github.com/openfaas/templates
// (MIT): the template's copy must stay this, byte for byte.
const openfaasNode20Handler = `'use strict'

module.exports = async (event, context) => {
  const result = {
    'body': JSON.stringify(event.body),
    'content-type': event.headers["content-type"]
  }

  return context
    .status(200)
    .succeed(result)
}
`

func TestNode20AfterburnTemplate(t *testing.T) {
	if watchdogBin == "" || buildDir == "" {
		t.Skip("AFTERBURN_WATCHDOG and TEMPLATES_BUILD unset: run `make test-templates` from the repository root")
	}
	t.Parallel()
	tp := template{name: "node20-afterburn", stage: stageNode, tests: "npm test"}
	src := filepath.Join(repoRoot, "templates", tp.name)
	if b, err := os.ReadFile(filepath.Join(src, "function", "handler.js")); err != nil || string(b) != openfaasNode20Handler {
		t.Errorf("function/handler.js is not the node20 template's handler.js (err %v):\n%s", err, b)
	}
	df, err := readDockerfile(filepath.Join(src, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	argv, image := checkImage(t, df, src, tp)

	dir := t.TempDir()
	copyTree(t, src, dir)
	tp.stage(t, dir, tp.tests)

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

	// What the handler answers: its result object as JSON, event.body being what the
	// template's body parsing makes of the request.
	client := &http.Client{Timeout: 20 * time.Second}
	for _, c := range []struct {
		method, target, contentType, body string
		want                              string
	}{
		{"POST", "/", "application/json", `{"name":"Ada"}`, `{"body":"{\"name\":\"Ada\"}","content-type":"application/json"}`},
		{"POST", "/orders", "text/plain", "hi", `{"body":"\"hi\"","content-type":"text/plain"}`},
		{"GET", "/?x=1", "", "", `{"body":"\"\"","content-type":"text/plain"}`},
		{"PUT", "/form", "application/x-www-form-urlencoded", "a=1&a=2", `{"body":"{\"a\":[\"1\",\"2\"]}","content-type":"application/x-www-form-urlencoded"}`},
	} {
		req, _ := http.NewRequest(c.method, base+c.target, strings.NewReader(c.body))
		if c.contentType != "" {
			req.Header.Set("Content-Type", c.contentType)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v\nwatchdog log:\n%s", c.method, c.target, err, wd.log())
		}
		got, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/json" || !bytes.Equal(got, []byte(c.want)) {
			t.Errorf("%s %s (%s %q): got %d %q %s; want 200 application/json %s\nwatchdog log:\n%s",
				c.method, c.target, c.contentType, c.body, resp.StatusCode, resp.Header.Get("Content-Type"), got, c.want, wd.log())
		}
	}

	// The image's HEALTHCHECK, then a clean stop: every worker and the watchdog exit 0.
	_, port, _ := strings.Cut(addr, ":")
	hc := exec.Command(image.healthcheck[0], image.healthcheck[1:]...)
	hc.Dir, hc.Env = dir, append(env, "port="+port)
	if out, err := runTimeout(hc, 20*time.Second); err != nil {
		t.Errorf("HEALTHCHECK %q: %v\n%s", image.healthcheck, err, out)
	}
	wd.cmd.Process.Signal(syscall.SIGTERM)
	if err := wd.wait(30 * time.Second); err != nil {
		t.Fatalf("after SIGTERM: %v; want exit status 0\nwatchdog log:\n%s", err, wd.log())
	}
	stopped := regexp.MustCompile(`(?m)w\d+ pid \d+ stopped: (.*)$`).FindAllStringSubmatch(wd.log(), -1)
	if len(stopped) != image.workers {
		t.Errorf("%d workers stopped after SIGTERM; want %d\nlog:\n%s", len(stopped), image.workers, wd.log())
	}
	for _, m := range stopped {
		if m[1] != "exit status 0" {
			t.Errorf("a worker stopped with %q; want exit status 0\nlog:\n%s", m[1], wd.log())
		}
	}
}
