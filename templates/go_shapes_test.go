package templates

// golang-http-afterburn: a function written for the OpenFaaS golang-http template runs
// unchanged (issue 32, PROTOCOL.md §13). Its handler.go is byte for byte golang-http's, and
// the template is staged, built and served as the other templates are (templates_test.go),
// with the golang-http handler's own answers in place of the skeleton's smoke test.

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The SHA-256 of template/golang-http/function/handler.go in
// github.com/openfaas/golang-http-template at 9644d651d81891deff9e2db2664dbadc082ea21c
// (MIT License, OpenFaaS Ltd and Alex Ellis), the template's default handler.
const golangHTTPHandlerSHA256 = "031995c6b72d131f558003645d86cddb60a65768a361d6d214345ca8be4b76ce"

func TestGolangHTTPHandlerIsUpstream(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("golang-http-afterburn", "function", "handler.go"))
	if err != nil {
		t.Fatal(err)
	}
	if sum := sha256.Sum256(b); hex.EncodeToString(sum[:]) != golangHTTPHandlerSHA256 {
		t.Errorf("golang-http-afterburn/function/handler.go is not golang-http's handler.go (SHA-256 %x; want %s)", sum, golangHTTPHandlerSHA256)
	}
}

// stageGoAdapter is stageGo with the openfaas adapter, also taken from this repository.
func stageGoAdapter(t *testing.T, dir, tests string) {
	env := []string{"CGO_ENABLED=0", "GOWORK=off"}
	for _, m := range []string{"afterburn", "afterburn/openfaas"} {
		run(t, dir, env, "go", "mod", "edit", "-replace=github.com/afterburn-dev/afterburn/go/"+m+"="+filepath.Join(repoRoot, "go", filepath.FromSlash(m)))
	}
	run(t, dir, env, "go", "mod", "tidy")
	run(t, dir, env, "sh", "-c", tests)
	run(t, dir, env, "go", "build", "-trimpath", "-ldflags", "-s -w", "-o", "handler", ".")
}

func TestGolangHTTPAfterburn(t *testing.T) {
	if watchdogBin == "" || buildDir == "" {
		t.Skip("AFTERBURN_WATCHDOG and TEMPLATES_BUILD unset: run `make test-templates` from the repository root")
	}
	tp := template{name: "golang-http-afterburn", stage: stageGoAdapter, tests: "go test handler/function/..."}
	src := filepath.Join(repoRoot, "templates", tp.name)
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
	base := "http://" + wd.waitLine(t, regexp.MustCompile(`listening on (\S+)$`))[1]
	wd.waitReady(t, base, image.workers)

	client := &http.Client{Timeout: 20 * time.Second}
	for i, body := range []string{"hello", "", strings.Repeat("é", 40000)} {
		req, _ := http.NewRequest("POST", base+"/?x=1", strings.NewReader(body))
		id := fmt.Sprintf("golang-http-%d", i)
		req.Header.Set("X-Request-Id", id)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("POST: %v\nwatchdog log:\n%s", err, wd.log())
		}
		got, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || string(got) != "Body: "+body || resp.Header.Get("AfterBurn-Request-Id") != id {
			t.Errorf("POST %.20q: got %d %.40q (request id %q); want 200 %.40q\nwatchdog log:\n%s",
				body, resp.StatusCode, got, resp.Header.Get("AfterBurn-Request-Id"), "Body: "+body, wd.log())
		}
	}

	wd.cmd.Process.Signal(syscall.SIGTERM)
	if err := wd.wait(30 * time.Second); err != nil {
		t.Fatalf("after SIGTERM: %v; want exit status 0\nwatchdog log:\n%s", err, wd.log())
	}
	if log := wd.log(); strings.Contains(log, " replaced: ") || len(regexp.MustCompile(`stopped: exit status 0`).FindAllString(log, -1)) != image.workers {
		t.Errorf("want every worker to stop with status 0 and none replaced; log:\n%s", log)
	}
}
