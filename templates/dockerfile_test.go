package templates

// A reader for the few Dockerfile instructions the template test needs: the final stage's
// WORKDIR, ENV, USER, HEALTHCHECK and CMD, the COPY that brings in the watchdog, and the
// RUN lines of every stage. Not a general parser: line continuations, comments, JSON and
// shell forms, and ENV's quoting and $VAR substitution, which is what the templates use.

import (
	"encoding/json"
	"fmt"
	"os"
	"path"
	"reflect"
	"regexp"
	"strings"
	"testing"
)

type instruction struct {
	line int    // first line of the instruction, 1-based
	cmd  string // upper case: FROM, RUN, ENV, ...
	args string // the rest, continuations joined
}

type dockerfile struct {
	path   string
	stages [][]instruction // each begins with its FROM
}

func readDockerfile(path string) (*dockerfile, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	df := &dockerfile{path: path}
	var cur *instruction
	for i, raw := range strings.Split(string(b), "\n") {
		line := strings.TrimSpace(raw)
		if strings.HasPrefix(line, "#") || (line == "" && cur == nil) {
			continue // comments may sit inside a continuation; Docker drops them too
		}
		if cur == nil {
			cmd, args, _ := strings.Cut(line, " ")
			cur = &instruction{line: i + 1, cmd: strings.ToUpper(cmd)}
			line = strings.TrimSpace(args)
		}
		if rest, ok := strings.CutSuffix(line, `\`); ok {
			cur.args += strings.TrimSpace(rest) + " "
			continue
		}
		cur.args = strings.TrimSpace(cur.args + line)
		switch {
		case cur.cmd == "FROM":
			df.stages = append(df.stages, []instruction{*cur})
		case len(df.stages) == 0:
			if cur.cmd != "ARG" {
				return nil, fmt.Errorf("%s:%d: %s before the first FROM", path, cur.line, cur.cmd)
			}
		default:
			df.stages[len(df.stages)-1] = append(df.stages[len(df.stages)-1], *cur)
		}
		cur = nil
	}
	if len(df.stages) == 0 {
		return nil, fmt.Errorf("%s: no FROM", path)
	}
	return df, nil
}

// final is the last stage: the image that runs.
func (df *dockerfile) final() []instruction { return df.stages[len(df.stages)-1] }

// all returns every instruction of the final stage named cmd.
func (df *dockerfile) all(cmd string) []instruction {
	var out []instruction
	for _, in := range df.final() {
		if in.cmd == cmd {
			out = append(out, in)
		}
	}
	return out
}

// last returns the final stage's last instruction named cmd (the one that wins).
func (df *dockerfile) last(cmd string) (instruction, bool) {
	all := df.all(cmd)
	if len(all) == 0 {
		return instruction{}, false
	}
	return all[len(all)-1], true
}

// runs joins the RUN lines of every stage, for checking which commands the build runs.
func (df *dockerfile) runs() string {
	var b strings.Builder
	for _, st := range df.stages {
		for _, in := range st {
			if in.cmd == "RUN" {
				b.WriteString(in.args + "\n")
			}
		}
	}
	return b.String()
}

// execForm reads a JSON array (exec form), or wraps a shell form in /bin/sh -c as Docker does.
func execForm(args string) ([]string, error) {
	if strings.HasPrefix(args, "[") {
		var argv []string
		if err := json.Unmarshal([]byte(args), &argv); err != nil {
			return nil, fmt.Errorf("bad exec form %s: %v", args, err)
		}
		return argv, nil
	}
	return []string{"/bin/sh", "-c", args}, nil
}

// healthcheck returns the command of the final stage's HEALTHCHECK, options skipped.
func (df *dockerfile) healthcheck() ([]string, error) {
	in, ok := df.last("HEALTHCHECK")
	if !ok {
		return nil, fmt.Errorf("%s: no HEALTHCHECK", df.path)
	}
	m := healthcheckRE.FindStringSubmatch(in.args)
	if m == nil {
		return nil, fmt.Errorf("%s:%d: HEALTHCHECK without CMD: %s", df.path, in.line, in.args)
	}
	return execForm(m[1])
}

var healthcheckRE = regexp.MustCompile(`^(?:--\S+\s+)*CMD\s+(.*)$`)

// env evaluates the final stage's ENV instructions in order, as Docker does: a value may use
// $NAME or ${NAME} of the base image's environment (base) or of an earlier ENV (not of
// the same one). It returns only the variables the Dockerfile sets, in the order set.
func (df *dockerfile) env(base map[string]string) ([][2]string, error) {
	return df.evalEnv(df.final(), base, nil)
}

// evalEnv evaluates the ENV instructions among ins, in order, and with args != nil their ARG
// instructions too (the value given in args, as --build-arg gives it, else the default): what
// a RUN after ins sees. A build argument is in a RUN's environment, never in the image's.
func (df *dockerfile) evalEnv(ins []instruction, base, args map[string]string) ([][2]string, error) {
	vars := map[string]string{}
	lookup := func(name string) string {
		if v, ok := vars[name]; ok {
			return v
		}
		return base[name]
	}
	var out [][2]string
	for _, in := range ins {
		if in.cmd != "ENV" && (in.cmd != "ARG" || args == nil) {
			continue
		}
		words, err := shellWords(in.args, lookup)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %s %s: %v", df.path, in.line, in.cmd, in.args, err)
		}
		if in.cmd == "ENV" && len(words) > 0 && !strings.Contains(words[0], "=") { // legacy "ENV name value"
			name, value, _ := strings.Cut(in.args, " ")
			words = []string{name + "=" + strings.TrimSpace(value)}
		}
		for _, w := range words {
			name, value, ok := strings.Cut(w, "=")
			if in.cmd == "ARG" {
				if given, set := args[name]; set {
					value, ok = given, true
				}
				if !ok {
					continue // ARG NAME without a default or a value: unset
				}
			} else if !ok {
				return nil, fmt.Errorf("%s:%d: ENV word %q without =", df.path, in.line, w)
			}
			vars[name] = value
			out = append(out, [2]string{name, value})
		}
	}
	return out, nil
}

// packagesStep is the build step that installs the library from the build context's
// packages/ (README.md, "Building from a checkout"): COPY packages/ DEST, then the RUN line
// right after it, in the same stage.
type packagesStep struct {
	dest    string      // where COPY put packages/, absolute
	run     instruction // the RUN line after it
	workdir string      // the RUN's working directory
	before  []instruction
}

// packages finds the packages step in the stages before the final one.
func (df *dockerfile) packages() (packagesStep, error) {
	for _, st := range df.stages[:len(df.stages)-1] {
		workdir := "/"
		for i, in := range st {
			switch in.cmd {
			case "WORKDIR":
				workdir = path.Join(workdir, in.args)
			case "COPY":
				var f []string
				for _, w := range strings.Fields(in.args) {
					if !strings.HasPrefix(w, "--") {
						f = append(f, w)
					}
				}
				if len(f) != 2 || strings.TrimSuffix(f[0], "/") != "packages" {
					continue
				}
				dest := f[1]
				if !path.IsAbs(dest) {
					dest = path.Join(workdir, dest)
				}
				step := packagesStep{dest: path.Clean(dest), workdir: workdir, before: st[:i]}
				if i+1 >= len(st) || st[i+1].cmd != "RUN" {
					return step, fmt.Errorf("%s:%d: COPY %s is not followed by the RUN line that installs from it", df.path, in.line, in.args)
				}
				step.run = st[i+1]
				return step, nil
			}
		}
	}
	return packagesStep{}, fmt.Errorf("%s: no build stage copies packages/ (COPY packages/ DEST), where make template-packages puts the library", df.path)
}

// shellWords splits s into words the way Docker's ENV does: double and single quotes,
// backslash escapes, $NAME and ${NAME} substitution (not inside single quotes).
func shellWords(s string, lookup func(string) string) ([]string, error) {
	var words []string
	var w strings.Builder
	inWord := false
	quote := byte(0)
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote == 0 && (c == ' ' || c == '\t'):
			if inWord {
				words = append(words, w.String())
				w.Reset()
				inWord = false
			}
			continue
		case quote == 0 && (c == '"' || c == '\''):
			quote = c
		case quote != 0 && c == quote:
			quote = 0
		case c == '\\' && quote != '\'' && i+1 < len(s):
			i++
			w.WriteByte(s[i])
		case c == '$' && quote != '\'':
			name, n := varName(s[i+1:])
			if n == 0 {
				w.WriteByte(c)
				break
			}
			w.WriteString(lookup(name))
			i += n
		default:
			w.WriteByte(c)
		}
		inWord = true
	}
	if quote != 0 {
		return nil, fmt.Errorf("unterminated %c", quote)
	}
	if inWord {
		words = append(words, w.String())
	}
	return words, nil
}

// varName reads NAME or {NAME} at the start of s; n is the number of bytes it took.
func varName(s string) (name string, n int) {
	if strings.HasPrefix(s, "{") {
		end := strings.IndexByte(s, '}')
		if end < 0 {
			return "", 0
		}
		return s[1:end], end + 1
	}
	for n < len(s) && (s[n] == '_' || s[n] >= 'A' && s[n] <= 'Z' || s[n] >= 'a' && s[n] <= 'z' || n > 0 && s[n] >= '0' && s[n] <= '9') {
		n++
	}
	return s[:n], n
}

func TestDockerfileReader(t *testing.T) {
	path := t.TempDir() + "/Dockerfile"
	os.WriteFile(path, []byte(`ARG V=1
FROM base:${V} AS build
RUN make \
    # a comment inside a continuation
    && make test
FROM runtime
WORKDIR /home/app
ENV PATH=/home/app/bin:$PATH a="x y" c=$a
ENV b=${a}\ z
ENV legacy some value
HEALTHCHECK --interval=5s \
    CMD ["probe", "-q"]
CMD ["server"]
`), 0o644)
	df, err := readDockerfile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(df.stages) != 2 {
		t.Fatalf("got %d stages; want 2", len(df.stages))
	}
	if got, want := df.runs(), "make && make test\n"; got != want {
		t.Errorf("runs: got %q; want %q", got, want)
	}
	env, err := df.env(map[string]string{"PATH": "/usr/bin"})
	if err != nil {
		t.Fatal(err)
	}
	want := [][2]string{{"PATH", "/home/app/bin:/usr/bin"}, {"a", "x y"}, {"c", ""}, {"b", "x y z"}, {"legacy", "some value"}}
	if !reflect.DeepEqual(env, want) {
		t.Errorf("env: got %q; want %q", env, want)
	}
	hc, err := df.healthcheck()
	if err != nil || !reflect.DeepEqual(hc, []string{"probe", "-q"}) {
		t.Errorf("healthcheck: got %q, %v; want [probe -q]", hc, err)
	}
	cmd, _ := df.last("CMD")
	if argv, _ := execForm(cmd.args); !reflect.DeepEqual(argv, []string{"server"}) {
		t.Errorf("CMD: got %q; want [server]", argv)
	}
	if argv, _ := execForm("echo hi"); !reflect.DeepEqual(argv, []string{"/bin/sh", "-c", "echo hi"}) {
		t.Errorf("shell form: got %q", argv)
	}
}

func TestDockerfilePackagesStep(t *testing.T) {
	file := t.TempDir() + "/Dockerfile"
	os.WriteFile(file, []byte(`FROM build AS build
ARG V=1
ARG UNSET
ENV P=/opt/$V
WORKDIR /home/app/function
COPY --chown=0:0 packages/ /home/app/packages/
RUN install ../packages $V
FROM runtime
WORKDIR /home/app
`), 0o644)
	df, err := readDockerfile(file)
	if err != nil {
		t.Fatal(err)
	}
	step, err := df.packages()
	if err != nil {
		t.Fatal(err)
	}
	if step.dest != "/home/app/packages" || step.workdir != "/home/app/function" || step.run.args != "install ../packages $V" {
		t.Errorf("packages step: got dest %q, workdir %q, RUN %q", step.dest, step.workdir, step.run.args)
	}
	for _, c := range []struct {
		args map[string]string
		want [][2]string
	}{
		{map[string]string{}, [][2]string{{"V", "1"}, {"P", "/opt/1"}}},
		{map[string]string{"V": "2", "UNSET": "x"}, [][2]string{{"V", "2"}, {"UNSET", "x"}, {"P", "/opt/2"}}},
	} {
		env, err := df.evalEnv(step.before, nil, c.args)
		if err != nil || !reflect.DeepEqual(env, c.want) {
			t.Errorf("build args %v: got %q, %v; want %q", c.args, env, err, c.want)
		}
	}
	os.WriteFile(file, []byte("FROM build AS build\nCOPY packages/ packages/\nCOPY x y\nFROM runtime\n"), 0o644)
	if df, _ = readDockerfile(file); df != nil {
		if _, err := df.packages(); err == nil {
			t.Error("COPY packages/ followed by no RUN: got no error")
		}
	}
}
