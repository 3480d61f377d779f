package templates

import (
	"os"
	"path/filepath"
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

// stageJavaSpring does what the Dockerfile does, natively: the build stage as every Java
// template's (stageJava: afterburn-runtime, -servlet and -spring-boot-starter from this
// repository, or in dist mode from packages/), then the final stage's RUN lines that run java
// (the extraction and the CDS training), in the image's WORKDIR.
func stageJavaSpring(t *testing.T, dir, tests string) {
	stageJava(t, dir, tests)
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
	t.Parallel()
	testTemplate(t, javaSpring)
}
