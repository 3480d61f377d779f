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

// java11-afterburn (issue 32, PROTOCOL.md §13): a handler written for OpenFaaS's java11
// template runs unchanged, through dev.afterburn.shapes.OpenFaas (java/shapes). Its Handler.java
// and HandlerTest.java are java11's defaults byte for byte (openfaas/templates,
// template/java11/function/src/{main/java/com/openfaas/function/Handler.java,test/java/HandlerTest.java}),
// so the smoke test is its own: the shared one asks for java-afterburn's skeleton's answers.
const (
	java11HandlerSHA256     = "3b987ab01d82e659d65d78e80ed8b8606e88b6f87131d96a87a9d80c9de59abd"
	java11HandlerTestSHA256 = "ce97313404bd2f95b6af4e697fc11adcb59536acf2693fc5624cdd929e535bbb"
)

var java11 = template{
	name:  "java11-afterburn",
	stage: stageJavaShapes,
	tests: `mvn -B -Dstyle.color=never -Dafterburn.version="${AFTERBURN_RUNTIME_VERSION}" -DskipTests="$skip" package`,
}

// stageJavaShapes is stageJava (stage_test.go) with afterburn-shapes beside afterburn-runtime,
// in a local repository of its own (TEMPLATES_BUILD/m2-shapes: stageJava empties
// m2/dev/afterburn while the other templates' tests run in parallel), which takes everything
// else from ~/.m2 as a file:// repository.
func stageJavaShapes(t *testing.T, dir, tests string) {
	parent, err := os.ReadFile(filepath.Join(repoRoot, "java", "pom.xml"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`<artifactId>afterburn-parent</artifactId>\s*<version>([^<]+)</version>`).FindSubmatch(parent)
	if m == nil {
		t.Fatal("java/pom.xml: no afterburn-parent version")
	}
	version := string(m[1])
	repo := filepath.Join(buildDir, "m2-shapes")
	lib := filepath.Join(repo, "dev", "afterburn")
	if err := os.RemoveAll(lib); err != nil { // never a stale copy of the library
		t.Fatal(err)
	}
	files := map[string]string{filepath.Join(repoRoot, "java", "pom.xml"): filepath.Join(lib, "afterburn-parent", version, "afterburn-parent-"+version+".pom")}
	for _, module := range []string{"runtime", "shapes"} {
		artifact := "afterburn-" + module
		files[filepath.Join(repoRoot, "java", module, "pom.xml")] = filepath.Join(lib, artifact, version, artifact+"-"+version+".pom")
		files[filepath.Join(repoRoot, "java", module, "target", artifact+"-"+version+".jar")] = filepath.Join(lib, artifact, version, artifact+"-"+version+".jar")
	}
	for src, dst := range files {
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatalf("%v (make test-templates builds java/ first)", err)
		}
		os.MkdirAll(filepath.Dir(dst), 0o755)
		if err := os.WriteFile(dst, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	home, _ := os.UserHomeDir()
	cache := filepath.Join(home, ".m2", "repository")
	settings := filepath.Join(t.TempDir(), "settings.xml")
	os.WriteFile(settings, []byte(`<settings>
  <profiles><profile><id>m2-cache</id>
    <repositories><repository><id>m2-cache</id><url>file://`+cache+`</url></repository></repositories>
    <pluginRepositories><pluginRepository><id>m2-cache</id><url>file://`+cache+`</url></pluginRepository></pluginRepositories>
  </profile></profiles>
  <activeProfiles><activeProfile>m2-cache</activeProfile></activeProfiles>
</settings>
`), 0o644)
	fn := filepath.Join(dir, "function")
	os.MkdirAll(filepath.Join(fn, ".mvn"), 0o755)
	os.WriteFile(filepath.Join(fn, ".mvn", "maven.config"), []byte("-s\n"+settings+"\n-Dmaven.repo.local="+repo+"\n"), 0o644)
	run(t, fn, []string{"AFTERBURN_RUNTIME_VERSION=" + version, "skip=false",
		"MAVEN_OPTS=-XX:TieredStopAtLevel=1 -XX:+UseSerialGC " + os.Getenv("MAVEN_OPTS")}, "sh", "-c", tests)
	// COPY --from=build /home/app/function/target/function.jar ./
	jar, err := os.ReadFile(filepath.Join(fn, "target", "function.jar"))
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "function.jar"), jar, 0o644)
}

func TestJava11Template(t *testing.T) {
	src := filepath.Join(repoRoot, "templates", java11.name)
	for file, want := range map[string]string{
		"function/src/main/java/com/openfaas/function/Handler.java": java11HandlerSHA256,
		"function/src/test/java/HandlerTest.java":                   java11HandlerTestSHA256,
	} {
		b, err := os.ReadFile(filepath.Join(src, file))
		if err != nil {
			t.Fatal(err)
		}
		if sum := sha256.Sum256(b); hex.EncodeToString(sum[:]) != want {
			t.Errorf("%s is no longer java11's own byte for byte (sha256 %x)", file, sum)
		}
	}
	if watchdogBin == "" || buildDir == "" {
		t.Skip("AFTERBURN_WATCHDOG and TEMPLATES_BUILD unset: run `make test-templates` from the repository root")
	}
	t.Parallel()
	df, err := readDockerfile(filepath.Join(src, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	argv, image := checkImage(t, df, src, java11)
	dir := t.TempDir()
	copyTree(t, src, dir)
	start := time.Now()
	java11.stage(t, dir, java11.tests)
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

	// What java11's entrypoint answers for its default handler, on any path and method, over
	// kept-alive connections.
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
		if resp.StatusCode != 200 || string(body) != "Hello, world!" {
			t.Errorf("%s: got %d %q; want 200 %q\nwatchdog log:\n%s", m, resp.StatusCode, body, "Hello, world!", wd.log())
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
		t.Logf("smoke passed: %d requests answered as java11 answers them, HEALTHCHECK exit 0, %d workers and the watchdog exited 0 on SIGTERM",
			wd.sent, len(stopped))
	}
}
