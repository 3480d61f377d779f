package templates

// Per language: what the Dockerfile's build stage does, natively, in one of two modes.
//
//   - source (make test-templates): the library from this source tree, wired in the way each
//     language allows (an editable venv, a node_modules link, the jars java.mk built in a local
//     Maven repository, replace directives).
//   - dist (make test-templates-dist): packages/ filled by make template-packages from dist/,
//     and the library installed from it by the Dockerfile's own RUN line (installFromPackages),
//     with nothing of this source tree on any path.
//
// Each stage function ends with the function's tests, run by the same command as the
// Dockerfile's RUN line (template.tests).

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var (
	distMode = os.Getenv("TEMPLATES_MODE") == "dist"
	// The packages' version (make test-templates-dist passes dist.mk's): given to the build as
	// --build-arg AFTERBURN_RUNTIME_VERSION / AFTERBURN_VERSION would be.
	distVersion = os.Getenv("TEMPLATES_VERSION")
)

// buildArgs are the --build-arg values of a build from packages: the packages' version.
func buildArgs() map[string]string {
	if distVersion == "" {
		return map[string]string{}
	}
	return map[string]string{"AFTERBURN_RUNTIME_VERSION": distVersion, "AFTERBURN_VERSION": distVersion}
}

// installFromPackages runs, natively in dir, the RUN line that follows the build stage's
// COPY packages/ (the Dockerfile's own command, text unchanged but for the image's paths,
// mapped into dir), with that stage's ARG and ENV values before it and env on top.
func installFromPackages(t *testing.T, dir string, env []string) {
	t.Helper()
	df, err := readDockerfile(filepath.Join(dir, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	step, err := df.packages()
	if err != nil {
		t.Fatal(err)
	}
	// The image's WORKDIR (the final stage's) is dir; a build stage elsewhere (Go's
	// /go/src/handler) is dir too.
	root := "/home/app"
	if wd, ok := df.last("WORKDIR"); ok {
		root = wd.args
	}
	mapped := func(s string) string { return strings.ReplaceAll(s, root, dir) }
	if step.workdir != root && !strings.HasPrefix(step.workdir, root+"/") {
		mapped = func(s string) string { return strings.ReplaceAll(strings.ReplaceAll(s, step.workdir, dir), root, dir) }
	}
	if got := mapped(step.dest); filepath.Clean(got) != filepath.Join(dir, "packages") {
		t.Fatalf("%s: COPY packages/ puts them in %s; the test has them in %s/packages", df.path, step.dest, dir)
	}
	vars, err := df.evalEnv(step.before, map[string]string{"PATH": os.Getenv("PATH")}, buildArgs())
	if err != nil {
		t.Fatal(err)
	}
	for _, kv := range vars {
		env = append(env, kv[0]+"="+mapped(kv[1]))
	}
	t.Logf("%s:%d: RUN %s", filepath.Base(df.path), step.run.line, step.run.args)
	run(t, mapped(step.workdir), env, "sh", "-c", mapped(step.run.args))
}

// Python: the image has a venv at WORKDIR/.venv holding afterburn-runtime and the function's
// requirements; pytest is installed beside it for the tests only (PYTHONPATH). Source: the
// venv is TEMPLATES_BUILD/python-venv, made by templates.mk with `pip install -e python` (this
// source tree, editable) and linked in as .venv. Dist: the Dockerfile's RUN line makes the
// venv and installs the wheel from packages/. pytest is in TEMPLATES_BUILD/python-test-tools.
func stagePython(t *testing.T, dir, tests string) {
	env := []string{"PATH=" + filepath.Join(dir, ".venv", "bin") + ":" + os.Getenv("PATH"), "PIP_DISABLE_PIP_VERSION_CHECK=1"}
	if distMode {
		installFromPackages(t, dir, nil)
		out := output(t, dir, append(env, "PYTHONNOUSERSITE=1"), "python", "-c",
			"import afterburn_runtime, importlib.metadata as m; print(afterburn_runtime.__file__, m.version('afterburn-runtime'))")
		file, version, _ := strings.Cut(strings.TrimSpace(out), " ")
		if !strings.HasPrefix(file, filepath.Join(dir, ".venv")+"/") || version != distVersion {
			t.Fatalf("afterburn_runtime %s imported from %s; want %s from the venv in %s", version, file, distVersion, dir)
		}
		t.Logf("installed from packages/: afterburn_runtime %s, %s", version, file)
	} else {
		symlink(t, filepath.Join(buildDir, "python-venv"), filepath.Join(dir, ".venv"))
	}
	run(t, dir, env, "python", "-m", "pip", "install", "-q", "--no-cache-dir", "-r", "function/requirements.txt")
	run(t, dir, append(env, "PYTHONPATH="+filepath.Join(buildDir, "python-test-tools")),
		"sh", "-c", tests)
}

// stagePython3HTTP stages as python3-http-afterburn's Dockerfile builds: function/ made a
// package (as python3-http does; template.runs holds that RUN command), then as for
// python3-afterburn.
func stagePython3HTTP(t *testing.T, dir, tests string) {
	if err := os.WriteFile(filepath.Join(dir, "function", "__init__.py"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	stagePython(t, dir, tests)
}

// Node: the image has afterburn-runtime in WORKDIR/node_modules (npm install at the top) and
// the function's own packages in function/node_modules. Source: node_modules/afterburn-runtime
// links to this repository's node/ (its dependencies installed by node.mk's npm ci), with the
// bin link npm would make. Dist: the Dockerfile's RUN line installs the tarball from packages/
// (undici from the npm registry).
func stageNode(t *testing.T, dir, tests string) {
	nm := filepath.Join(dir, "node_modules")
	env := []string{"NPM_CONFIG_AUDIT=false", "NPM_CONFIG_FUND=false", "NPM_CONFIG_UPDATE_NOTIFIER=false"}
	if distMode {
		installFromPackages(t, dir, env)
		lib := filepath.Join(nm, "afterburn-runtime")
		if fi, err := os.Lstat(lib); err != nil || !fi.IsDir() {
			t.Fatalf("%s: want the package installed as a directory (%v)", lib, err)
		}
		version := strings.TrimSpace(output(t, dir, nil, "node", "-p", "require('./node_modules/afterburn-runtime/package.json').version"))
		if version != distVersion {
			t.Fatalf("node_modules/afterburn-runtime is %s; want %s from packages/", version, distVersion)
		}
		t.Logf("installed from packages/: afterburn-runtime %s in node_modules", version)
	} else {
		symlink(t, filepath.Join(repoRoot, "node"), filepath.Join(nm, "afterburn-runtime"))
		symlink(t, "../afterburn-runtime/bin/afterburn.js", filepath.Join(nm, ".bin", "afterburn"))
	}
	fn := filepath.Join(dir, "function")
	run(t, fn, env, "npm", "install", "--loglevel=error")
	run(t, fn, env, "sh", "-c", tests)
}

// The Java modules a template may depend on, published under dev.afterburn as afterburn-<module>.
var javaModules = []string{"runtime", "shapes", "servlet", "spring-boot-starter"}

// Java: the image runs target/function.jar, shaded by the function's own Maven build, which
// also runs its tests. A local repository of the template's own, TEMPLATES_BUILD/m2-<template>,
// takes everything but the library from ~/.m2 as a file:// repository (no download, ~/.m2 left
// as it is), and never holds a stale copy of the library. Source: the parent POM and each
// module's POM and jar that java.mk built (java/<module>/target). Dist: the Dockerfile's RUN
// line installs the jars and POMs of packages/ with maven-install-plugin.
func stageJava(t *testing.T, dir, tests string) {
	yml, err := os.ReadFile(filepath.Join(dir, "template.yml"))
	if err != nil {
		t.Fatal(err)
	}
	version := distVersion
	repo := filepath.Join(buildDir, "m2-"+yamlField(yml, "language"))
	if distMode {
		repo += "-dist"
	}
	lib := filepath.Join(repo, "dev", "afterburn")
	if err := os.RemoveAll(lib); err != nil {
		t.Fatal(err)
	}
	if !distMode {
		parent, err := os.ReadFile(filepath.Join(repoRoot, "java", "pom.xml"))
		if err != nil {
			t.Fatal(err)
		}
		m := regexp.MustCompile(`<artifactId>afterburn-parent</artifactId>\s*<version>([^<]+)</version>`).FindSubmatch(parent)
		if m == nil {
			t.Fatal("java/pom.xml: no afterburn-parent version")
		}
		version = string(m[1])
		files := map[string]string{filepath.Join(repoRoot, "java", "pom.xml"): filepath.Join(lib, "afterburn-parent", version, "afterburn-parent-"+version+".pom")}
		for _, module := range javaModules {
			artifact := "afterburn-" + module
			jar := filepath.Join(repoRoot, "java", module, "target", artifact+"-"+version+".jar")
			if _, err := os.Stat(jar); err != nil {
				continue // not built (yet): a template that needs it fails to resolve it
			}
			files[jar] = filepath.Join(lib, artifact, version, artifact+"-"+version+".jar")
			files[filepath.Join(repoRoot, "java", module, "pom.xml")] = filepath.Join(lib, artifact, version, artifact+"-"+version+".pom")
		}
		for src, dst := range files {
			copyFile(t, src, dst)
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
	// so that the commands run are the Dockerfile's own.
	fn := filepath.Join(dir, "function")
	os.MkdirAll(filepath.Join(fn, ".mvn"), 0o755)
	os.WriteFile(filepath.Join(fn, ".mvn", "maven.config"), []byte("-s\n"+settings+"\n-Dmaven.repo.local="+repo+"\n"), 0o644)
	// C1 only and the serial GC, as java.mk does for short-lived JVMs: Maven's own start-up
	// is most of this build.
	mavenOpts := "MAVEN_OPTS=-XX:TieredStopAtLevel=1 -XX:+UseSerialGC " + os.Getenv("MAVEN_OPTS")
	if distMode {
		installFromPackages(t, dir, []string{mavenOpts})
		jars, _ := filepath.Glob(filepath.Join(dir, "packages", "*.jar"))
		if len(jars) == 0 {
			t.Fatalf("%s/packages holds no jar: run make template-packages", dir)
		}
		for _, jar := range jars {
			base := filepath.Base(jar)
			artifact := strings.TrimSuffix(base, "-"+version+".jar")
			installed := filepath.Join(lib, artifact, version, base)
			if a, b := readFile(t, jar), readFile(t, installed); !bytes.Equal(a, b) {
				t.Fatalf("%s is not packages/%s", installed, base)
			}
		}
		t.Logf("installed from packages/ into %s: %d jars", repo, len(jars))
	}
	// The build argument naming the library's version: AFTERBURN_RUNTIME_VERSION, or
	// AFTERBURN_VERSION where the template builds on several of its artifacts (java-spring).
	run(t, fn, []string{"AFTERBURN_RUNTIME_VERSION=" + version, "AFTERBURN_VERSION=" + version, "skip=false", mavenOpts}, "sh", "-c", tests)
	// COPY --from=build /home/app/function/target/function.jar ./
	copyFile(t, filepath.Join(fn, "target", "function.jar"), filepath.Join(dir, "function.jar"))
}

// The library's module and its adapters' (go/afterburn, go/afterburn/<adapter>).
var goLibraryRE = regexp.MustCompile(`(?m)^\s*(?:require\s+)?(github\.com/afterburn-dev/afterburn/go/afterburn(?:/[a-z]+)?) v\S+`)

// Go: the image runs ./handler, built from the template's main.go and the function module.
// Source: a replace directive points each of the library's modules the template's go.mod
// requires at this repository's go/afterburn[/adapter]. Dist: the Dockerfile's RUN line puts
// packages/goproxy (tools/modproxy's file module proxy) in front of GOPROXY, with a module
// cache of the test's own (it must never hold these versions for anything else); other modules
// come from this machine's module download cache, else from proxy.golang.org.
func stageGo(t *testing.T, dir, tests string) {
	env := []string{"CGO_ENABLED=0", "GOWORK=off"}
	if distMode {
		cache := strings.TrimSpace(output(t, dir, nil, "go", "env", "GOMODCACHE"))
		env = append(env, "GOMODCACHE="+filepath.Join(t.TempDir(), "modcache"), "GOFLAGS=-modcacherw",
			"GOPROXY=file://"+filepath.Join(cache, "cache", "download")+",https://proxy.golang.org")
		installFromPackages(t, dir, env)
	} else {
		gomod := readFile(t, filepath.Join(dir, "go.mod"))
		for _, m := range goLibraryRE.FindAllSubmatch(gomod, -1) {
			rel := strings.TrimPrefix(string(m[1]), "github.com/afterburn-dev/afterburn/")
			run(t, dir, env, "go", "mod", "edit", "-replace="+string(m[1])+"="+filepath.Join(repoRoot, filepath.FromSlash(rel)))
		}
		run(t, dir, env, "go", "mod", "tidy")
	}
	run(t, dir, env, "sh", "-c", tests)
	run(t, dir, env, "go", "build", "-trimpath", "-ldflags", "-s -w", "-o", "handler", ".")
	if distMode {
		info := output(t, dir, env, "go", "version", "-m", "handler")
		want := regexp.MustCompile(`(?m)^\s+dep\s+github\.com/afterburn-dev/afterburn/go/afterburn\s+v` + regexp.QuoteMeta(distVersion) + `\s`)
		if !want.MatchString(info) {
			t.Fatalf("handler was not built against the library at v%s from packages/goproxy:\n%s", distVersion, info)
		}
		t.Logf("built against github.com/afterburn-dev/afterburn/go/afterburn v%s from packages/goproxy", distVersion)
	}
}

// ---- helpers ----------------------------------------------------------------------------

// output runs argv in dir with env added to the test's and returns its standard output.
func output(t *testing.T, dir string, env []string, argv ...string) string {
	t.Helper()
	cmd := command(dir, env, argv...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("in %s: %s: %v\n%s", dir, strings.Join(argv, " "), err, stderr.Bytes())
	}
	return string(out)
}

func readFile(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func copyFile(t *testing.T, src, dst string) {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatalf("%v (make test-templates builds every language first)", err)
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, b, 0o644); err != nil {
		t.Fatal(err)
	}
}
