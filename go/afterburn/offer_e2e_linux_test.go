package afterburn

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/afterburn-dev/afterburn/go/afterburn/internal/shapetest"
)

// Under the real watchdog's lanes=auto, its default (PROTOCOL.md §2.5 "Offered lanes"),
// the worker is offered 16 lanes and serves as many as it prefers: one by default,
// having closed the pipes of the 15 others and the cancel pipe, so that it holds its
// two log pipes and lane 1's (where it held 35 pipes while it ignored the offer); four
// with AFTERBURN_GO_PREFERRED_LANES=4, which carry four requests at once. The watchdog
// says what it settled on in its log.
func TestOfferedLanesUnderWatchdog(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the watchdog")
	}
	for _, tc := range []struct {
		prefer string // AFTERBURN_GO_PREFERRED_LANES; "" unset
		lanes  int
	}{{"", 1}, {"4", 4}} {
		t.Run(fmt.Sprintf("lanes=%d", tc.lanes), func(t *testing.T) {
			unsetPreferredLanesEnv(t)
			if tc.prefer != "" {
				t.Setenv(preferredLanesEnv, tc.prefer) // the watchdog passes its environment on (§2.3)
			}
			wd := shapetest.StartWatchdog(t, "-lanes", "auto")
			wd.WaitLog(t, fmt.Sprintf("lanes=auto: the library serves %d lane(s) per worker", tc.lanes))
			worker := childOf(t, wd.Pid())
			pipes := pipeDescriptors(t, worker)
			want := 2 + 2*tc.lanes // the log pipes, then the lanes'
			if tc.lanes > 1 {
				want++ // the cancel pipe
			}
			if len(pipes) != want {
				t.Errorf("the worker holds %d pipe descriptors (%v); want %d: fds 1 and 2, %d lane(s)' pipes and a cancel pipe with more than one lane",
					len(pipes), pipes, want, tc.lanes)
			}

			// Every lane at once: lanes served one after another take lanes × 500 ms.
			start := time.Now()
			greetAtOnce(t, wd, tc.lanes, "/sleep?ms=500")
			if took := time.Since(start); tc.lanes > 1 && took > 1400*time.Millisecond {
				t.Errorf("%d requests of 500 ms on %d lanes took %v; want them at once", tc.lanes, tc.lanes, took)
			}
		})
	}
}

// pipeDescriptors lists the descriptors of process pid that are pipes, as
// /proc/PID/fd says ("3 pipe:[123]").
func pipeDescriptors(t *testing.T, pid int) []string {
	t.Helper()
	dir := fmt.Sprintf("/proc/%d/fd", pid)
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var pipes []string
	for _, e := range entries {
		if target, err := os.Readlink(filepath.Join(dir, e.Name())); err == nil && strings.HasPrefix(target, "pipe:") {
			pipes = append(pipes, e.Name()+" "+target)
		}
	}
	sort.Strings(pipes)
	return pipes
}
