// Package check holds what both layers share: a check, its result, the
// section rule ("a check naming a missing section fails") and the report.
package check

import (
	"fmt"
	"time"
)

// Level is the requirement level of a check: a failing SHOULD is reported
// but does not fail the run.
type Level string

const (
	Must   Level = "MUST"
	Should Level = "SHOULD"
)

// Status is the outcome of one check.
type Status string

const (
	Pass Status = "PASS"
	Fail Status = "FAIL"
	Skip Status = "SKIP"
)

// Result is one line of the report.
type Result struct {
	ID          string        `json:"id"`
	Layer       string        `json:"layer"`
	Section     string        `json:"section"`
	Level       Level         `json:"level"`
	Description string        `json:"description"`
	Status      Status        `json:"status"`
	Detail      string        `json:"detail,omitempty"` // failure (or skip) explanation
	Duration    time.Duration `json:"-"`
	DurationMS  int64         `json:"duration_ms"`
}

// Meta describes a check before it runs.
type Meta struct {
	ID          string
	Layer       string // "wire" or "e2e"
	Section     string
	Level       Level
	Description string
}

// Result builds a result for m.
func (m Meta) Result(s Status, detail string, d time.Duration) Result {
	return Result{ID: m.ID, Layer: m.Layer, Section: m.Section, Level: m.Level,
		Description: m.Description, Status: s, Detail: detail, Duration: d, DurationMS: d.Milliseconds()}
}

// SectionResult returns a failing result when m cites a section the spec
// lacks (README.md: such a check fails without running).
func (m Meta) SectionResult(has func(string) bool) (Result, bool) {
	if has(m.Section) {
		return Result{}, false
	}
	return m.Result(Fail, fmt.Sprintf("section §%s is not a heading of the spec", m.Section), 0), true
}

// SkipError makes a check report SKIP with its message instead of FAIL.
type SkipError struct{ Reason string }

func (e *SkipError) Error() string { return "skipped: " + e.Reason }
