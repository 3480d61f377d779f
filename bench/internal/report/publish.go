package report

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/afterburn-dev/afterburn/bench/internal/harness"
)

// Publish writes a run into dir: <stamp>.json, and latest.json, latest.md and latest.png. A
// run the quiet-run guard found noisy is written as <stamp>-noisy.json and <stamp>-noisy.md
// only, and latest.* stay as they were: figures taken on a busy machine must not replace a
// quiet run's (bench/README.md). A run without the languages scenario (the fork or lanes
// scenario alone, or both) is published as latest-<OnlyScenarios>.json and .md, such as
// latest-fork.*, beside a whole run's latest.*, which it must not replace. A partial run (a
// scenario failed or the run was interrupted: harness.Results.Failure) is written as
// <stamp>-partial.json and <stamp>-partial.md only, noisy or not, and latest.* stay as they
// were: it lacks the failed scenario and those after it, and must not stand for a whole run.
// It returns the files it wrote.
func Publish(dir, stamp string, r *harness.Results) ([]string, error) {
	var written []string
	writeJSON := func(name string) error {
		p := filepath.Join(dir, name)
		written = append(written, p)
		return WriteJSON(p, r)
	}
	writeMarkdown := func(name string) error {
		p := filepath.Join(dir, name)
		f, err := os.Create(p)
		if err != nil {
			return err
		}
		written = append(written, p)
		Markdown(f, r)
		return f.Close()
	}
	if r.Partial() {
		if err := writeJSON(stamp + "-partial.json"); err != nil {
			return written, err
		}
		return written, writeMarkdown(stamp + "-partial.md")
	}
	if r.Noisy() {
		if err := writeJSON(stamp + "-noisy.json"); err != nil {
			return written, err
		}
		return written, writeMarkdown(stamp + "-noisy.md")
	}
	if s := OnlyScenarios(r); s != "" {
		for _, name := range []string{stamp + ".json", "latest-" + s + ".json"} {
			if err := writeJSON(name); err != nil {
				return written, err
			}
		}
		return written, writeMarkdown("latest-" + s + ".md")
	}
	for _, name := range []string{stamp + ".json", "latest.json"} {
		if err := writeJSON(name); err != nil {
			return written, err
		}
	}
	if err := writeMarkdown("latest.md"); err != nil {
		return written, err
	}
	p := filepath.Join(dir, "latest.png")
	written = append(written, p)
	return written, Chart(p, r)
}

// OnlyScenarios names the scenarios of a run that did not measure the languages scenario:
// "lanes", "fork", "front", "lanes-fork" and so on; "" for a run that did (or measured nothing).
func OnlyScenarios(r *harness.Results) string {
	if len(r.Order) > 0 {
		return ""
	}
	var parts []string
	if r.Lanes != nil {
		parts = append(parts, "lanes")
	}
	if r.ForkMode != nil {
		parts = append(parts, "fork")
	}
	if r.Isolation != nil {
		parts = append(parts, "isolation")
	}
	if r.Front != nil {
		parts = append(parts, "front")
	}
	return strings.Join(parts, "-")
}
