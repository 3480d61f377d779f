package check

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
)

// Reporter prints results as they come (text) or collects them (JSON).
// Safe for concurrent use.
type Reporter struct {
	mu      sync.Mutex
	out     io.Writer
	json    bool
	verbose bool
	results []Result
}

// NewReporter writes text lines to out, or one JSON document at Finish.
func NewReporter(out io.Writer, asJSON, verbose bool) *Reporter {
	return &Reporter{out: out, json: asJSON, verbose: verbose}
}

// Add records r and, in text mode, prints it:
// "PASS <id> (§N.N) <description>", then the indented detail of a failure.
func (p *Reporter) Add(r Result) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.results = append(p.results, r)
	if p.json {
		return
	}
	fmt.Fprintf(p.out, "%s %s (§%s) %s\n", r.Status, r.ID, r.Section, r.Description)
	if r.Detail != "" && (r.Status != Pass || p.verbose) {
		if r.Status == Fail && r.Level == Should {
			fmt.Fprintf(p.out, "    (level SHOULD: reported, does not fail the run)\n")
		}
		for _, line := range strings.Split(strings.TrimRight(r.Detail, "\n"), "\n") {
			fmt.Fprintf(p.out, "    %s\n", line)
		}
	}
}

// Counts returns passed, failed, skipped and failed MUST checks.
func (p *Reporter) Counts() (passed, failed, skipped, mustFailed int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, r := range p.results {
		switch r.Status {
		case Pass:
			passed++
		case Fail:
			failed++
			if r.Level != Should {
				mustFailed++
			}
		case Skip:
			skipped++
		}
	}
	return
}

// Summary is the last line: "N passed, N failed" and ", N skipped" if any.
func (p *Reporter) Summary() string {
	passed, failed, skipped, _ := p.Counts()
	s := fmt.Sprintf("%d passed, %d failed", passed, failed)
	if skipped > 0 {
		s += fmt.Sprintf(", %d skipped", skipped)
	}
	return s
}

// report is the -json document.
type report struct {
	Results    []Result `json:"results"`
	Passed     int      `json:"passed"`
	Failed     int      `json:"failed"`
	Skipped    int      `json:"skipped"`
	MustFailed int      `json:"must_failed"`
	Summary    string   `json:"summary"`
}

// Finish prints the summary line (or the JSON report) and reports whether
// every MUST check passed.
func (p *Reporter) Finish() (ok bool, err error) {
	passed, failed, skipped, mustFailed := p.Counts()
	if p.json {
		p.mu.Lock()
		res := p.results
		p.mu.Unlock()
		if res == nil {
			res = []Result{}
		}
		enc := json.NewEncoder(p.out)
		enc.SetIndent("", "  ")
		err = enc.Encode(report{Results: res, Passed: passed, Failed: failed, Skipped: skipped,
			MustFailed: mustFailed, Summary: p.Summary()})
	} else {
		_, err = fmt.Fprintln(p.out, p.Summary())
	}
	return mustFailed == 0, err
}

// Ordered prints results in index order while they complete in any order,
// so parallel runs print deterministically.
type Ordered struct {
	mu      sync.Mutex
	rep     *Reporter
	next    int
	pending map[int]Result
}

// NewOrdered prints through rep starting at index 0.
func NewOrdered(rep *Reporter) *Ordered {
	return &Ordered{rep: rep, pending: map[int]Result{}}
}

// Done records the result of check i and prints every result now in order.
func (o *Ordered) Done(i int, r Result) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.pending[i] = r
	for {
		r, ok := o.pending[o.next]
		if !ok {
			return
		}
		delete(o.pending, o.next)
		o.next++
		o.rep.Add(r)
	}
}
