package main

// docs/configuration.md holds the table of every setting, rendered from the
// flag definitions themselves (the usage text that --help prints), so the
// documentation cannot drift from the binary (STYLE.md habit 7). After
// changing a flag, regenerate it with
//
//	cd go && go test ./cmd/afterburn-watchdog -run TestConfigurationDoc -update

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/afterburn-dev/afterburn/go/internal/watchdog"
)

var update = flag.Bool("update", false, "rewrite docs/configuration.md from the flag definitions")

const (
	configDoc      = "../../../docs/configuration.md"
	generatedBegin = "<!-- BEGIN GENERATED: go test ./cmd/afterburn-watchdog -run TestConfigurationDoc -update -->\n"
	generatedEnd   = "<!-- END GENERATED -->\n"
)

// setting is one flag as --help describes it.
type setting struct {
	name, value, meaning, def string
}

// usageText is what --help prints, taken from the same ParseConfig that
// main calls, with an empty environment so that no default is overridden.
func usageText(t *testing.T) string {
	t.Helper()
	var usage bytes.Buffer
	_, err := watchdog.ParseConfig([]string{"-help"}, func(string) string { return "" }, &usage)
	if !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("ParseConfig(-help): %v; want flag.ErrHelp", err)
	}
	return usage.String()
}

var (
	// flag.PrintDefaults writes "  -name value" (value absent for booleans),
	// then the usage on lines starting with "    \t".
	flagLine    = regexp.MustCompile(`^  -(\w+)(?: (\w+))?$`)
	defaultTail = regexp.MustCompile(`^(.*) \(default (.*)\)$`)
)

// parseUsage turns the flag list of --help into settings, in its order
// (flag.PrintDefaults sorts by name).
func parseUsage(usage string) ([]setting, error) {
	var out []setting
	for _, line := range strings.Split(usage, "\n") {
		if m := flagLine.FindStringSubmatch(line); m != nil {
			out = append(out, setting{name: m[1], value: m[2]})
			continue
		}
		if rest, ok := strings.CutPrefix(line, "    \t"); ok {
			if len(out) == 0 {
				return nil, fmt.Errorf("usage line %q before any flag", line)
			}
			s := &out[len(out)-1]
			s.meaning = strings.TrimSpace(s.meaning + " " + rest)
		}
	}
	for i := range out {
		s := &out[i]
		if m := defaultTail.FindStringSubmatch(s.meaning); m != nil {
			s.meaning, s.def = m[1], m[2]
		}
		if s.def == "" && s.value == "" {
			s.def = "false" // PrintDefaults omits a boolean's zero default
		}
		if s.meaning == "" {
			return nil, fmt.Errorf("flag -%s has no usage text", s.name)
		}
	}
	if len(out) == 0 {
		return nil, errors.New("no flag found in the usage text")
	}
	return out, nil
}

// renderTable is the generated part of docs/configuration.md.
func renderTable(settings []setting) string {
	var b strings.Builder
	b.WriteString(generatedBegin)
	b.WriteString("\n| flag | environment | value | default | meaning |\n|---|---|---|---|---|\n")
	for _, s := range settings {
		env := "`" + s.name + "`"
		if s.name == "port" {
			env += ", then `PORT`" // PROTOCOL.md §10.2: Knative sets PORT
		}
		value := "boolean"
		if s.value != "" {
			value = s.value
		}
		def := "—"
		if s.def != "" {
			def = "`" + s.def + "`"
		}
		meaning := strings.ReplaceAll(s.meaning, "|", `\|`)
		fmt.Fprintf(&b, "| `-%s` | %s | %s | %s | %s |\n", s.name, env, value, def, meaning)
	}
	b.WriteString("\n")
	b.WriteString(generatedEnd)
	return b.String()
}

// replaceGenerated swaps the generated block of doc for table.
func replaceGenerated(doc, table string) (string, error) {
	begin := strings.Index(doc, generatedBegin)
	end := strings.Index(doc, generatedEnd)
	if begin < 0 || end < begin {
		return "", fmt.Errorf("no %q ... %q block", strings.TrimSpace(generatedBegin), strings.TrimSpace(generatedEnd))
	}
	return doc[:begin] + table + doc[end+len(generatedEnd):], nil
}

func TestConfigurationDoc(t *testing.T) {
	settings, err := parseUsage(usageText(t))
	if err != nil {
		t.Fatal(err)
	}
	old, err := os.ReadFile(configDoc)
	if err != nil {
		t.Fatal(err)
	}
	want, err := replaceGenerated(string(old), renderTable(settings))
	if err != nil {
		t.Fatalf("%s: %v", configDoc, err)
	}
	if want == string(old) {
		return
	}
	if *update {
		if err := os.WriteFile(configDoc, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("rewrote %s", filepath.Clean(configDoc))
		return
	}
	t.Errorf("%s differs from the flag definitions; run\n\tcd go && go test ./cmd/afterburn-watchdog -run TestConfigurationDoc -update\n%s",
		filepath.Clean(configDoc), lineDiff(string(old), want))
}

// TestParseUsage pins the reading of flag.PrintDefaults output, so that a
// change of its layout fails here rather than emptying the documentation.
func TestParseUsage(t *testing.T) {
	usage := "flags:\n" +
		"  -exec_timeout duration\n    \tdeadline; 0 = none (default 10s)\n" +
		"  -prefix_logs\n    \ttimestamp lines (default true)\n" +
		"  -stdio\n    \tuse stdio\n" +
		"  -workers number\n    \tpool size;\n    \t0 = CPUs\n"
	got, err := parseUsage(usage)
	if err != nil {
		t.Fatal(err)
	}
	want := []setting{
		{"exec_timeout", "duration", "deadline; 0 = none", "10s"},
		{"prefix_logs", "", "timestamp lines", "true"},
		{"stdio", "", "use stdio", "false"},
		{"workers", "number", "pool size; 0 = CPUs", ""},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("parseUsage:\ngot  %q\nwant %q", got, want)
	}
	if _, err := parseUsage("no flags here\n"); err == nil {
		t.Error("parseUsage of a text without flags: no error")
	}
}

// TestConfigurationDocCoversHelp checks the real --help of the binary (not
// only ParseConfig in this process) documents exactly the flags of the table.
func TestConfigurationDocCoversHelp(t *testing.T) {
	t.Parallel()
	out, err := watchdogCmd([]string{"--help"}).CombinedOutput()
	if err != nil {
		t.Fatalf("--help: %v\n%s", err, out)
	}
	fromHelp, err := parseUsage(string(out))
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile(configDoc)
	if err != nil {
		t.Fatal(err)
	}
	documented := regexp.MustCompile("(?m)^\\| `-(\\w+)` \\|").FindAllStringSubmatch(string(doc), -1)
	var got, want []string
	for _, m := range documented {
		got = append(got, m[1])
	}
	for _, s := range fromHelp {
		want = append(want, s.name)
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("%s documents %q; --help lists %q", filepath.Clean(configDoc), got, want)
	}
}

// lineDiff lists the lines only in a ("-") and only in b ("+"), enough to
// show which row of the table changed.
func lineDiff(a, b string) string {
	inA, inB := map[string]bool{}, map[string]bool{}
	for _, l := range strings.Split(a, "\n") {
		inA[l] = true
	}
	for _, l := range strings.Split(b, "\n") {
		inB[l] = true
	}
	var d strings.Builder
	for _, l := range strings.Split(a, "\n") {
		if !inB[l] {
			d.WriteString("- " + l + "\n")
		}
	}
	for _, l := range strings.Split(b, "\n") {
		if !inA[l] {
			d.WriteString("+ " + l + "\n")
		}
	}
	return d.String()
}
