// Package suite wires the layers together: it loads the spec and the
// vectors, runs the selected layers and reports.
package suite

import (
	"context"
	"fmt"
	"io"
	"regexp"
	"time"

	"github.com/afterburn-dev/afterburn/conformance/internal/check"
	"github.com/afterburn-dev/afterburn/conformance/internal/e2e"
	"github.com/afterburn-dev/afterburn/conformance/internal/spec"
	"github.com/afterburn-dev/afterburn/conformance/internal/vectors"
	"github.com/afterburn-dev/afterburn/conformance/internal/wire"
)

// Options are the command-line settings (README.md).
type Options struct {
	Watchdog string // -watchdog: the watchdog binary (e2e layer)
	// WatchdogFlags (-watchdog-flags) go to every watchdog the e2e layer
	// starts, before each check's own: the mode the layer runs in.
	WatchdogFlags []string
	Function      string        // -function: the fixture command
	Layer         string        // -layer: wire, e2e or all
	Spec          string        // -spec: path of PROTOCOL.md
	Vectors       string        // -vectors: the vectors folder
	Run           string        // -run: regular expression on check ids
	JSON          bool          // -json: machine-readable report
	Verbose       bool          // -v
	Timeout       time.Duration // -timeout: per check
	Parallel      int           // -parallel: wire vectors at once
	Lanes         int           // -lanes: the wire layer's fixture gets that many lanes (§2.5)
}

// Run runs the suite and writes the report to out. ok is false when a MUST
// check failed; err is a usage or set-up error (nothing was checked).
func Run(ctx context.Context, o Options, out io.Writer) (ok bool, err error) {
	if o.Function == "" {
		return false, fmt.Errorf("-function is required")
	}
	wireOn, e2eOn := false, false
	switch o.Layer {
	case "wire":
		wireOn = true
	case "e2e":
		e2eOn = true
	case "all", "":
		wireOn, e2eOn = true, true
	default:
		return false, fmt.Errorf("-layer %q: want wire, e2e or all", o.Layer)
	}
	if o.Layer == "e2e" && o.Watchdog == "" {
		return false, fmt.Errorf("-layer e2e needs -watchdog")
	}
	var sel *regexp.Regexp
	if o.Run != "" {
		if sel, err = regexp.Compile(o.Run); err != nil {
			return false, fmt.Errorf("-run: %v", err)
		}
	}
	secs, err := spec.Load(o.Spec)
	if err != nil {
		return false, err
	}
	var files []*vectors.File
	if wireOn {
		if files, err = vectors.LoadDir(o.Vectors); err != nil {
			return false, err
		}
	}
	rep := check.NewReporter(out, o.JSON, o.Verbose)
	if wireOn {
		wire.RunLayer(ctx, wire.Config{
			Function: o.Function, Files: files, Run: sel, Timeout: o.Timeout,
			Parallel: o.Parallel, Lanes: o.Lanes, Sections: secs.Has, Report: rep.Add,
		})
	}
	if e2eOn {
		e2e.RunLayer(ctx, e2e.Config{
			Watchdog: o.Watchdog, WatchdogFlags: o.WatchdogFlags, Function: o.Function, Run: sel, Timeout: o.Timeout,
			Sections: secs.Has, Report: rep.Add,
		})
	}
	if passed, failed, skipped, _ := rep.Counts(); sel != nil && passed+failed+skipped == 0 {
		// A selection that ran nothing would print "0 passed, 0 failed" and pass.
		return false, fmt.Errorf("-run %q matches no check (-layer %s): a check's id is <layer>/<name>, such as e2e/kill-busy-worker", o.Run, o.Layer)
	}
	return rep.Finish()
}
