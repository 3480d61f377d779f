package deploytest

// There is no Docker engine in CI or on the developers' machines, so the
// image recipe is proved natively: the test runs the Dockerfile's own
// `go build` line (read from the file, so the two cannot drift) and checks
// what FROM scratch needs: a static binary with no ELF interpreter.

import (
	"debug/elf"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

const dockerfile = repoRoot + "/deploy/watchdog/Dockerfile"

var envLine = regexp.MustCompile(`^ENV (\w+)=(\S+)$`)

// buildRecipe is the environment and argv of the Dockerfile's build step.
type buildRecipe struct {
	env  []string // ENV lines of the build stage, as KEY=VALUE
	argv []string // the RUN go build line, split as sh would for this subset
	out  string   // the -o path inside the image
}

// readBuildRecipe extracts the build stage's ENV lines and its go build RUN
// line from the Dockerfile text.
func readBuildRecipe(text string) (buildRecipe, error) {
	var r buildRecipe
	for _, line := range strings.Split(text, "\n") {
		if m := envLine.FindStringSubmatch(line); m != nil {
			r.env = append(r.env, m[1]+"="+m[2])
		}
		if rest, ok := strings.CutPrefix(line, "RUN go build "); ok {
			if r.argv != nil {
				return r, fmt.Errorf("two RUN go build lines")
			}
			args, err := splitWords(rest)
			if err != nil {
				return r, err
			}
			r.argv = append([]string{"go", "build"}, args...)
		}
	}
	if r.argv == nil {
		return r, fmt.Errorf("no RUN go build line")
	}
	for i, a := range r.argv {
		if a == "-o" && i+1 < len(r.argv) {
			r.out = r.argv[i+1]
		}
	}
	if r.out == "" {
		return r, fmt.Errorf("the go build line has no -o")
	}
	return r, nil
}

// splitWords splits a shell word list with double quotes and no escapes,
// which is all the Dockerfile's RUN line uses.
func splitWords(s string) ([]string, error) {
	var words []string
	var cur strings.Builder
	inWord, quoted := false, false
	for _, c := range s {
		switch {
		case c == '"':
			quoted, inWord = !quoted, true
		case (c == ' ' || c == '\t') && !quoted:
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		case c == '\\' || c == '\'' || c == '$' || c == '`':
			return nil, fmt.Errorf("unsupported shell syntax %q in %q", c, s)
		default:
			cur.WriteRune(c)
			inWord = true
		}
	}
	if quoted {
		return nil, fmt.Errorf("unterminated quote in %q", s)
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words, nil
}

// buildLikeDockerfile runs the Dockerfile's build step in go/ (the image's
// WORKDIR holds go/), writing the binary to dst.
func buildLikeDockerfile(dst string) error {
	text, err := os.ReadFile(dockerfile)
	if err != nil {
		return err
	}
	r, err := readBuildRecipe(string(text))
	if err != nil {
		return fmt.Errorf("%s: %v", dockerfile, err)
	}
	argv := append([]string(nil), r.argv...)
	for i := range argv {
		if argv[i] == r.out {
			argv[i] = dst
		}
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = repoRoot + "/go"
	cmd.Env = append(os.Environ(), r.env...)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%s (env %q): %v\n%s", strings.Join(argv, " "), r.env, err, out)
	}
	return nil
}

func TestDockerfileRecipe(t *testing.T) {
	text, err := os.ReadFile(dockerfile)
	if err != nil {
		t.Fatal(err)
	}
	r, err := readBuildRecipe(string(text))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`(?m)^FROM golang:1\.26[.\w-]* AS build$`),
		regexp.MustCompile(`(?m)^FROM scratch$`),
		regexp.MustCompile(`(?m)^COPY --from=build ` + regexp.QuoteMeta(r.out) + ` /afterburn-watchdog$`),
		regexp.MustCompile(`(?m)^USER 65534(:65534)?$`),
		regexp.MustCompile(`(?m)^ENTRYPOINT \["/afterburn-watchdog"\]$`),
	} {
		if !want.Match(text) {
			t.Errorf("%s has no line matching %v", dockerfile, want)
		}
	}
	if !strings.Contains(strings.Join(r.env, " "), "CGO_ENABLED=0") {
		t.Errorf("build stage env %q; want CGO_ENABLED=0", r.env)
	}
	argv := strings.Join(r.argv, " ")
	for _, want := range []string{"-trimpath", "-ldflags -s -w", "./cmd/afterburn-watchdog"} {
		if !strings.Contains(argv, want) {
			t.Errorf("build line %q lacks %q", argv, want)
		}
	}
}

func TestSplitWords(t *testing.T) {
	got, err := splitWords(`-trimpath -ldflags "-s -w" -o /out/x ./cmd/x`)
	if want := "[-trimpath -ldflags -s -w -o /out/x ./cmd/x]"; err != nil || fmt.Sprint(got) != want || len(got) != 6 {
		t.Errorf("splitWords: %q, %v; want %s (6 words)", got, err, want)
	}
	if _, err := splitWords(`-ldflags "-s`); err == nil {
		t.Error("splitWords of an open quote: no error")
	}
	if _, err := splitWords(`-o $OUT`); err == nil {
		t.Error("splitWords of a variable: no error")
	}
}

// TestImageBinaryIsStatic: FROM scratch has no dynamic loader and no libc,
// so the binary must have no PT_INTERP program header and no needed library,
// and it must run there (--help exits 0 without touching any file).
func TestImageBinaryIsStatic(t *testing.T) {
	bin := watchdogBinary(t)
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatalf("%s is not ELF: %v", bin, err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Errorf("%s has an ELF interpreter: not static", filepath.Base(bin))
		}
	}
	if libs, err := f.ImportedLibraries(); err != nil || len(libs) != 0 {
		t.Errorf("%s needs shared libraries %q (%v)", filepath.Base(bin), libs, err)
	}
	if f.Section(".symtab") != nil {
		t.Errorf("%s has a symbol table: -ldflags \"-s -w\" did not strip it", filepath.Base(bin))
	}
	cmd := exec.Command(bin, "--help")
	cmd.Env = []string{} // an image from scratch has no environment to lean on
	cmd.Dir = t.TempDir()
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "usage: afterburn-watchdog") {
		t.Errorf("%s --help: %v\n%s", filepath.Base(bin), err, out)
	}
}
