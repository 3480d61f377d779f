package check

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

func TestReporterText(t *testing.T) {
	var buf bytes.Buffer
	rep := NewReporter(&buf, false, false)
	m := Meta{ID: "framing/a", Section: "4.2", Level: Must, Description: "d"}
	rep.Add(m.Result(Pass, "hidden unless -v", 0))
	rep.Add(m.Result(Fail, "got x; want y", 0))
	s := Meta{ID: "e2e/b", Section: "2.1", Level: Should, Description: "e"}
	rep.Add(s.Result(Fail, "slow", 0))
	rep.Add(s.Result(Skip, "no /proc", 0))
	ok, err := rep.Finish()
	if err != nil {
		t.Fatal(err)
	}
	if ok {
		t.Error("Finish: got ok with a failed MUST check")
	}
	out := buf.String()
	for _, want := range []string{"PASS framing/a (§4.2) d\n", "FAIL framing/a (§4.2) d\n    got x; want y\n",
		"SKIP e2e/b (§2.1) e\n", "level SHOULD"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "hidden") {
		t.Error("detail of a passing check printed without -v")
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if got := lines[len(lines)-1]; got != "1 passed, 2 failed, 1 skipped" {
		t.Errorf("last line: got %q; want %q", got, "1 passed, 2 failed, 1 skipped")
	}
}

func TestReporterShouldOnly(t *testing.T) {
	var buf bytes.Buffer
	rep := NewReporter(&buf, true, false)
	s := Meta{ID: "e2e/b", Section: "2.1", Level: Should, Description: "e"}
	rep.Add(s.Result(Fail, "slow", 0))
	ok, _ := rep.Finish()
	if !ok {
		t.Error("Finish: a failing SHOULD failed the run")
	}
	var doc map[string]any
	if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatalf("-json output is not JSON: %v", err)
	}
	if doc["failed"] != 1.0 || doc["must_failed"] != 0.0 || doc["summary"] != "0 passed, 1 failed" {
		t.Errorf("json report: %v", doc)
	}
}

func TestOrdered(t *testing.T) {
	var buf bytes.Buffer
	o := NewOrdered(NewReporter(&buf, false, false))
	for _, i := range []int{2, 0, 1} {
		o.Done(i, Meta{ID: string(rune('a' + i)), Section: "1"}.Result(Pass, "", 0))
	}
	if got := buf.String(); got != "PASS a (§1) \nPASS b (§1) \nPASS c (§1) \n" {
		t.Errorf("got %q", got)
	}
}

func TestSectionResult(t *testing.T) {
	has := func(s string) bool { return s == "4.3" }
	if _, bad := (Meta{Section: "4.3"}).SectionResult(has); bad {
		t.Error("4.3 present: got a failure")
	}
	r, bad := (Meta{ID: "x/y", Section: "4.9"}).SectionResult(has)
	if !bad || r.Status != Fail || !strings.Contains(r.Detail, "§4.9") {
		t.Errorf("4.9 missing: got %v %+v", bad, r)
	}
}
