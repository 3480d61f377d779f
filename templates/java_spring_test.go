package templates

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// java-spring-afterburn (issue 31): an ordinary Spring Boot 3.5 MVC application with
// afterburn-spring-boot-starter, served by the watchdog with a class-data sharing archive the
// image builds. The shared smoke test (templates_test.go) drives it as it drives java-afterburn:
// the skeleton's controller answers the same requests the same way.
var javaSpring = template{
	name:  "java-spring-afterburn",
	stage: stageJavaSpring,
	tests: `mvn -B -Dstyle.color=never -Dafterburn.version="${AFTERBURN_VERSION}" -DskipTests="$skip" package`,
	// The Dockerfile installs the library from packages/ as the other Java templates do.
	install: javaInstall,
}

// stageJavaSpring does what the Dockerfile does, natively: the build stage's Maven build with
// afterburn-runtime, -servlet and -spring-boot-starter from this repository (in a local
// repository of its own, TEMPLATES_BUILD/m2-spring, taking everything else from ~/.m2 as a
// file:// repository), then the final stage's COPY and its RUN lines that run java (the
// extraction and the CDS training), in the image's WORKDIR.
func stageJavaSpring(t *testing.T, dir, tests string) {
	parent, err := os.ReadFile(filepath.Join(repoRoot, "java", "pom.xml"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`<artifactId>afterburn-parent</artifactId>\s*<version>([^<]+)</version>`).FindSubmatch(parent)
	if m == nil {
		t.Fatal("java/pom.xml: no afterburn-parent version")
	}
	version := string(m[1])
	repo := filepath.Join(buildDir, "m2-spring")
	lib := filepath.Join(repo, "dev", "afterburn")
	if err := os.RemoveAll(lib); err != nil { // never a stale copy of the library
		t.Fatal(err)
	}
	files := map[string]string{filepath.Join(repoRoot, "java", "pom.xml"): filepath.Join(lib, "afterburn-parent", version, "afterburn-parent-"+version+".pom")}
	for _, module := range []string{"runtime", "servlet", "spring-boot-starter"} {
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
	run(t, fn, []string{"AFTERBURN_VERSION=" + version, "skip=false",
		"MAVEN_OPTS=-XX:TieredStopAtLevel=1 -XX:+UseSerialGC " + os.Getenv("MAVEN_OPTS")}, "sh", "-c", tests)
	// COPY --from=build /home/app/function/target/function.jar ./
	jar, err := os.ReadFile(filepath.Join(fn, "target", "function.jar"))
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "function.jar"), jar, 0o644)
	// The final stage's RUN lines that run java: the extraction and the CDS training, as written.
	df, err := readDockerfile(filepath.Join(repoRoot, "templates", "java-spring-afterburn", "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	ran := 0
	for _, in := range df.final() {
		if in.cmd != "RUN" || !strings.HasPrefix(strings.TrimSpace(in.args), "java ") {
			continue
		}
		start := time.Now()
		run(t, dir, nil, "sh", "-c", in.args)
		t.Logf("RUN %.60s… took %v", in.args, time.Since(start).Round(time.Millisecond))
		ran++
	}
	if ran == 0 {
		t.Fatalf("%s: the final stage has no RUN line that runs java (the CDS archive)", df.path)
	}
	if _, err := os.Stat(filepath.Join(dir, "app", "function.jsa")); err != nil {
		t.Fatalf("the final stage's RUN made no archive: %v", err)
	}
}

func TestJavaSpringTemplate(t *testing.T) {
	if watchdogBin == "" || buildDir == "" {
		t.Skip("AFTERBURN_WATCHDOG and TEMPLATES_BUILD unset: run `make test-templates` from the repository root")
	}
	if distMode {
		// make dist publishes afterburn-runtime and afterburn-shapes only: the starter and
		// afterburn-servlet are not among the packages yet (their POMs name the parent).
		t.Skip("java-spring-afterburn: dist/ has no afterburn-servlet and afterburn-spring-boot-starter yet")
	}
	t.Parallel()
	testTemplate(t, javaSpring)
}
