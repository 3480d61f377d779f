package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/afterburn-dev/afterburn/bench/internal/harness"
)

// partial is sample() as Run returns it when the isolation scenario failed after the
// languages scenario completed (harness.runScenarios).
func partial(noisy bool) *harness.Results {
	r := guarded(noisy)
	r.Failure = &harness.Failure{Scenario: "isolation",
		Error:     "isolation: python/hello-request: 4 of 4 workers were not forked\nwatchdog log line",
		Completed: []string{"languages", "lanes", "fork"}, NotRun: []string{"front"}}
	return r
}

// TestPartialRunIsNotPublished: a partial run is written as <stamp>-partial.{json,md} only,
// quiet or noisy, and the latest whole run stays latest; its markdown says partial, names
// the failed scenario and its whole error before any figure, and lists what completed and
// what did not run; the JSON carries the failure.
func TestPartialRunIsNotPublished(t *testing.T) {
	dir := t.TempDir()
	before := publishQuiet(t, dir, "2026-11-29T040000Z")
	for i, noisy := range []bool{false, true} {
		stamp := []string{"2026-11-29T052920Z", "2026-11-29T062920Z"}[i]
		written, err := Publish(dir, stamp, partial(noisy))
		if err != nil {
			t.Fatal(err)
		}
		after := listDir(t, dir)
		for n, b := range before {
			if after[n] != b {
				t.Errorf("noisy=%v: a partial run changed %s", noisy, n)
			}
		}
		var added []string
		for _, n := range names(after) {
			if _, ok := before[n]; !ok {
				added = append(added, n)
			}
		}
		if got, want := strings.Join(added, " "), stamp+"-partial.json "+stamp+"-partial.md"; got != want {
			t.Errorf("noisy=%v: a partial run added %s; want only %s", noisy, got, want)
		}
		md, js := after[stamp+"-partial.md"], after[stamp+"-partial.json"]
		if len(written) != 2 || md == "" || !strings.Contains(js, `"failure"`) || !strings.Contains(js, `"scenario": "isolation"`) {
			t.Fatalf("noisy=%v: wrote %v, dir now %v; want %s-partial.{json,md} with the failure", noisy, written, names(after), stamp)
		}
		header, _, ok := strings.Cut(md, "- machine:")
		if !ok {
			t.Fatalf("no machine line in\n%s", md)
		}
		mustContain(t, header, "PARTIAL RUN, NOT PUBLISHED", "The isolation scenario failed",
			"4 of 4 workers were not forked\nwatchdog log line", "completed before it: languages, lanes, fork", "front did not run")
		if !strings.Contains(md, "## java") {
			t.Errorf("the completed languages scenario is missing from the partial markdown")
		}
		before = after
	}
}

// TestInterruptedRunSaysSo: an interrupted run's markdown says interrupted, not failed.
func TestInterruptedRunSaysSo(t *testing.T) {
	r := partial(false)
	r.Failure.Interrupted = true
	var b bytes.Buffer
	Markdown(&b, r)
	mustContain(t, b.String(), "PARTIAL RUN, NOT PUBLISHED", "The isolation scenario was interrupted")
	if strings.Contains(b.String(), "scenario failed") {
		t.Errorf("an interrupted run reads as failed:\n%s", b.String())
	}
	b.Reset()
	Markdown(&b, sample())
	if strings.Contains(b.String(), "PARTIAL") {
		t.Errorf("a whole run reads as partial:\n%s", b.String())
	}
}
