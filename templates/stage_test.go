package templates

// Per language: what the Dockerfile's build stage does, with the library taken from this
// repository instead of its registry. Each stage function ends with the function's tests,
// run by the same command as the Dockerfile's RUN line (template.tests).

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"
)

// Python: the image has a venv at WORKDIR/.venv holding afterburn-runtime and the function's
// requirements; pytest is installed beside it for the tests only (PYTHONPATH). Here the venv
// is TEMPLATES_BUILD/python-venv, made by templates.mk with `pip install -e python` (this
// source tree, editable) and linked in as .venv; pytest is in TEMPLATES_BUILD/python-test-tools.
func stagePython(t *testing.T, dir, tests string) {
	symlink(t, filepath.Join(buildDir, "python-venv"), filepath.Join(dir, ".venv"))
	env := []string{"PATH=" + filepath.Join(dir, ".venv", "bin") + ":" + os.Getenv("PATH"), "PIP_DISABLE_PIP_VERSION_CHECK=1"}
	run(t, dir, env, "python", "-m", "pip", "install", "-q", "--no-cache-dir", "-r", "function/requirements.txt")
	run(t, dir, append(env, "PYTHONPATH="+filepath.Join(buildDir, "python-test-tools")),
		"sh", "-c", tests)
}

// Node: the image has afterburn-runtime in WORKDIR/node_modules (npm install at the top) and
// the function's own packages in function/node_modules. Here node_modules/afterburn-runtime
// links to this repository's node/ (its dependencies installed by node.mk's npm ci), with the
// bin link npm would make.
func stageNode(t *testing.T, dir, tests string) {
	nm := filepath.Join(dir, "node_modules")
	symlink(t, filepath.Join(repoRoot, "node"), filepath.Join(nm, "afterburn-runtime"))
	symlink(t, "../afterburn-runtime/bin/afterburn.js", filepath.Join(nm, ".bin", "afterburn"))
	fn := filepath.Join(dir, "function")
	env := []string{"NPM_CONFIG_AUDIT=false", "NPM_CONFIG_FUND=false", "NPM_CONFIG_UPDATE_NOTIFIER=false"}
	run(t, fn, env, "npm", "install", "--loglevel=error")
	run(t, fn, env, "sh", "-c", tests)
}

// Java: the image runs target/function.jar, shaded by the function's own Maven build, which
// also runs its tests. Here afterburn-runtime comes from java/runtime/target (built by
// java.mk) placed in a local repository of the test's own, TEMPLATES_BUILD/m2, which takes
// everything else from ~/.m2 as a file:// repository (no download, ~/.m2 left as it is).
func stageJava(t *testing.T, dir, tests string) {
	parent, err := os.ReadFile(filepath.Join(repoRoot, "java", "pom.xml"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`<artifactId>afterburn-parent</artifactId>\s*<version>([^<]+)</version>`).FindSubmatch(parent)
	if m == nil {
		t.Fatal("java/pom.xml: no afterburn-parent version")
	}
	version := string(m[1])
	repo := filepath.Join(buildDir, "m2")
	lib := filepath.Join(repo, "dev", "afterburn")
	if err := os.RemoveAll(lib); err != nil { // never a stale copy of the library
		t.Fatal(err)
	}
	for src, dst := range map[string]string{
		filepath.Join(repoRoot, "java", "pom.xml"):                                                filepath.Join(lib, "afterburn-parent", version, "afterburn-parent-"+version+".pom"),
		filepath.Join(repoRoot, "java", "runtime", "pom.xml"):                                     filepath.Join(lib, "afterburn-runtime", version, "afterburn-runtime-"+version+".pom"),
		filepath.Join(repoRoot, "java", "runtime", "target", "afterburn-runtime-"+version+".jar"): filepath.Join(lib, "afterburn-runtime", version, "afterburn-runtime-"+version+".jar"),
	} {
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
	// Maven 3.8 has no MAVEN_ARGS: the project's .mvn/maven.config carries the two options,
	// so that the command run is the Dockerfile's own.
	fn := filepath.Join(dir, "function")
	os.MkdirAll(filepath.Join(fn, ".mvn"), 0o755)
	os.WriteFile(filepath.Join(fn, ".mvn", "maven.config"), []byte("-s\n"+settings+"\n-Dmaven.repo.local="+repo+"\n"), 0o644)
	// C1 only and the serial GC, as java.mk does for short-lived JVMs: Maven's own start-up
	// is most of this build.
	run(t, fn, []string{"AFTERBURN_RUNTIME_VERSION=" + version, "skip=false",
		"MAVEN_OPTS=-XX:TieredStopAtLevel=1 -XX:+UseSerialGC " + os.Getenv("MAVEN_OPTS")}, "sh", "-c", tests)
	// COPY --from=build /home/app/function/target/function.jar ./
	jar, err := os.ReadFile(filepath.Join(fn, "target", "function.jar"))
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "function.jar"), jar, 0o644)
}

// Go: the image runs ./handler, built from the template's main.go and the function module.
// Here a replace directive points github.com/afterburn-dev/afterburn/go/afterburn (the
// library's module) at this repository's go/afterburn instead of the version the Dockerfile
// requires from the Go proxy.
func stageGo(t *testing.T, dir, tests string) {
	env := []string{"CGO_ENABLED=0", "GOWORK=off"}
	run(t, dir, env, "go", "mod", "edit", "-replace=github.com/afterburn-dev/afterburn/go/afterburn="+filepath.Join(repoRoot, "go", "afterburn"))
	run(t, dir, env, "go", "mod", "tidy")
	run(t, dir, env, "sh", "-c", tests)
	run(t, dir, env, "go", "build", "-trimpath", "-ldflags", "-s -w", "-o", "handler", ".")
}
