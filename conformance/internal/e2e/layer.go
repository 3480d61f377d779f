package e2e

import (
	"context"
	"fmt"
	"net/http"
	"regexp"
	"runtime/debug"
	"strings"
	"time"

	"github.com/afterburn-dev/afterburn/conformance/internal/check"
)

// Config is what the e2e layer needs.
type Config struct {
	Watchdog string // the watchdog binary; "" skips the layer
	// WatchdogFlags go before each check's own to every watchdog the layer
	// starts: a mode (-spawn fork) under which the whole layer runs.
	WatchdogFlags []string
	Function      string             // the fixture command
	Run           *regexp.Regexp     // selects check ids; nil selects all
	Timeout       time.Duration      // default time limit of one check
	Sections      func(string) bool  // reports whether the spec has a section
	Report        func(check.Result) // receives each result
	// oneLane is set once a check of the lanes group found the library
	// served on one lane: the group's other checks skip without a watchdog.
	oneLane bool
	// autoLanes is L under lanes=auto, which the layer's flags leave as the
	// watchdog's default (probeAutoLanes); 0 before the probe.
	autoLanes int
	// noFork is set once a check of the isolation group found the library
	// refused for isolation=request (it does not list fork, §2.7): the
	// group's other checks skip without a watchdog.
	noFork bool
}

// Check is one e2e check.
type Check struct {
	Name        string // the id is "e2e/" + Name
	Section     string
	Level       check.Level // "" is MUST
	Description string
	Timeout     time.Duration // at least this long, whatever -timeout says
	Run         func(t *T)
}

// Group is a set of checks sharing one watchdog started with Flags and
// Env, in order. A Manual group starts no watchdog: each check starts its
// own with T.StartWatchdog.
type Group struct {
	Name   string
	Flags  []string
	Env    map[string]string
	Manual bool
	// ExecOnly groups need workers started the exec way (stdio mode: a
	// template needs fd mode, §2.6); under -spawn fork they are skipped.
	ExecOnly bool
	// OneLane groups need lanes = 1: stdio mode, or spawn=fork, which
	// §2.5 refuses at start-up with lanes > 1; under -lanes K they are skipped.
	OneLane bool
	// Persistent groups need workers that serve many requests (recycling):
	// under -isolation request (§2.7) they are skipped.
	Persistent bool
	// LaneFlags, when set, adds flags after Flags when the layer runs with
	// -lanes K > 1 (a max_inflight that leaves room to fill every lane).
	LaneFlags func(k int) []string
	Checks    []Check
}

func (c *Check) meta() check.Meta {
	lvl := c.Level
	if lvl == "" {
		lvl = check.Must
	}
	return check.Meta{ID: "e2e/" + c.Name, Layer: "e2e", Section: c.Section, Level: lvl, Description: c.Description}
}

// RunLayer runs every selected check of Groups.
func RunLayer(ctx context.Context, c Config) {
	if err := probeAutoLanes(ctx, &c); err != nil {
		// Each group's own start will say what is wrong; the checks then
		// expect one lane.
		c.autoLanes = 1
	}
	for _, g := range Groups() {
		var sel []*Check
		for i := range g.Checks {
			if c.Run == nil || c.Run.MatchString("e2e/"+g.Checks[i].Name) {
				sel = append(sel, &g.Checks[i])
			}
		}
		if len(sel) == 0 {
			continue
		}
		runGroup(ctx, &c, g, sel)
	}
}

func runGroup(ctx context.Context, c *Config, g Group, sel []*Check) {
	if c.Watchdog == "" {
		for _, ch := range sel {
			c.Report(ch.meta().Result(check.Skip, "no -watchdog given", 0))
		}
		return
	}
	if g.ExecOnly && c.forking() {
		for _, ch := range sel {
			c.Report(ch.meta().Result(check.Skip, "needs workers started the exec way; spawn=fork needs fd mode (§2.6)", 0))
		}
		return
	}
	if g.Persistent && c.isolated() {
		for _, ch := range sel {
			c.Report(ch.meta().Result(check.Skip, "needs workers that serve many requests: under isolation=request every worker serves one and exits, and recycling settings are refused (§2.7)", 0))
		}
		return
	}
	if g.OneLane && c.givenLanes() > 1 { // under auto these modes are one lane (§2.5)
		for _, ch := range sel {
			c.Report(ch.meta().Result(check.Skip, "needs lanes = 1: lanes need fd mode and spawn=exec (§2.5)", 0))
		}
		return
	}
	var wd *Watchdog
	var startErr error
	if !g.Manual {
		flags := g.Flags
		if g.LaneFlags != nil && c.lanes() > 1 {
			flags = append(append([]string{}, flags...), g.LaneFlags(c.lanes())...)
		}
		sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		wd, startErr = StartWatchdog(sctx, c.Watchdog, c.Function, c.flags(flags), g.Env)
		if startErr == nil {
			if err := wd.WaitReady(sctx, 0); err != nil {
				startErr = fmt.Errorf("%v\n%s", err, wd.Tail())
			}
		}
		cancel()
		if wd != nil {
			defer wd.Stop()
		}
	}
	for _, ch := range sel {
		m := ch.meta()
		if r, bad := m.SectionResult(c.Sections); bad {
			c.Report(r)
			continue
		}
		if startErr != nil {
			c.Report(m.Result(check.Fail, fmt.Sprintf("group %s: watchdog %v did not start: %v", g.Name, g.Flags, startErr), 0))
			continue
		}
		c.Report(runCheck(ctx, c, g, ch, wd))
		if wd != nil && wd.Exited() {
			// A dead shared watchdog would fail every later check of the
			// group for the same reason; say so once per check.
			startErr = fmt.Errorf("the group's watchdog exited (%s)\n%s", wd.ExitString(), wd.Tail())
		}
	}
}

func runCheck(ctx context.Context, c *Config, g Group, ch *Check, wd *Watchdog) (res check.Result) {
	m := ch.meta()
	timeout := c.Timeout
	if ch.Timeout > timeout {
		timeout = ch.Timeout
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tr := &http.Transport{DisableCompression: true, MaxIdleConnsPerHost: 16}
	t := &T{ctx: cctx, cfg: c, WD: wd, client: &http.Client{Transport: tr}}
	start := time.Now()
	defer func() {
		for i := len(t.cleanups) - 1; i >= 0; i-- {
			t.cleanups[i]()
		}
		tr.CloseIdleConnections()
	}()
	defer func() {
		v := recover()
		d := time.Since(start)
		switch v := v.(type) {
		case nil:
			res = m.Result(check.Pass, "", d)
			return
		case failure:
			res = m.Result(check.Fail, t.report(v.msg), d)
		case *check.SkipError:
			res = m.Result(check.Skip, v.Reason, d)
		default:
			res = m.Result(check.Fail, t.report(fmt.Sprintf("panic: %v\n%s", v, debug.Stack())), d)
		}
	}()
	ch.Run(t)
	return
}

// report is a failure's text: the message, the last request and the
// watchdog's log tail (README: everything needed to debug it).
func (t *T) report(msg string) string {
	var b strings.Builder
	b.WriteString(msg)
	if last := t.lastReq(); last != "" && !strings.Contains(msg, last) {
		fmt.Fprintf(&b, "\nlast request: %s", last)
	}
	if t.ctx.Err() != nil {
		b.WriteString("\n(the check ran out of time)")
	}
	if t.WD != nil {
		fmt.Fprintf(&b, "\nwatchdog: %s\n%s", t.WD.ExitString(), t.WD.Tail())
	}
	return b.String()
}

// flags is a check's watchdog flags after the layer's own: a check's flag
// wins where both set one (the flag package keeps the last).
func (c *Config) flags(own []string) []string {
	return append(append([]string{}, c.WatchdogFlags...), own...)
}

// isolated reports whether the layer runs every watchdog with -isolation
// request (§2.7): one fresh process per request.
func (c *Config) isolated() bool {
	return flagValue(c.WatchdogFlags, "isolation") == "request"
}

// flagValue is the last value the flags give name, as -name V, -name=V,
// --name V or --name=V; "" when none does.
func flagValue(flags []string, name string) string {
	v := ""
	for i, f := range flags {
		f = strings.TrimPrefix(strings.TrimPrefix(f, "-"), "-")
		switch {
		case f == name && i+1 < len(flags):
			v = flags[i+1]
		case strings.HasPrefix(f, name+"="):
			v = f[len(name)+1:]
		}
	}
	return v
}

// forking reports whether the layer runs every watchdog with -spawn fork.
func (c *Config) forking() bool {
	for i, f := range c.WatchdogFlags {
		if (f == "-spawn" || f == "--spawn") && i+1 < len(c.WatchdogFlags) && c.WatchdogFlags[i+1] == "fork" ||
			f == "-spawn=fork" || f == "--spawn=fork" {
			return true
		}
	}
	return false
}
