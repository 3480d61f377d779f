package harness

import (
	"fmt"
	"os"
	"path/filepath"
)

// The relay (bench/README.md): a minimal C relay, one epoll loop doing framing only, in front
// of a minimal C child over two pipes, is the physical limit of client → pipe → child → pipe →
// client on the machine. The same C child behind the watchdog measures the watchdog apart
// from any library: "watchdog + C child ÷ relay" is the watchdog's own cost, and a
// language's CPU per request above the C child's is its library's (and runtime's) own.

// The C programs, built by make bench-build with the system's C compiler.
const (
	cRelayBin = "bench/bin/c-relay"
	cChildBin = "bench/bin/c-child"
)

// hopConfigs are the configurations every run measures whatever its languages: the relay and
// the watchdog, each in front of the C child, and the same watchdog with its front off (every
// request through net/http, as before PROTOCOL.md §10.6), so that what the front saves shows
// in every run. watchdog makes a watchdog command line (with the -workers of every other
// watchdog configuration) around a worker command.
func hopConfigs(root string, watchdog func(child []string) []string) ([]*config, error) {
	for _, f := range []string{cRelayBin, cChildBin} {
		if _, err := os.Stat(filepath.Join(root, f)); err != nil {
			return nil, fmt.Errorf("the C relay is not built (%s missing): run make bench-build", f)
		}
	}
	return []*config{
		{key: string(Relay), program: "c-relay", argv: relayCommand()},
		{key: string(WatchdogC), program: "afterburn-watchdog", argv: watchdog([]string{cChildBin}), pool: true},
		{key: string(WatchdogCNetHTTP), program: "afterburn-watchdog", argv: netHTTPOnly(watchdog([]string{cChildBin})), pool: true},
	}, nil
}

// netHTTPOnly is a watchdog command line with its front turned off (-front off, §10.6): the
// same flags and worker command, every client request served through net/http. The flag goes
// before the "--" that starts the worker's command.
func netHTTPOnly(argv []string) []string {
	out := make([]string, 0, len(argv)+2)
	for i, a := range argv {
		if a == "--" {
			out = append(append(out, "-front", "off"), argv[i:]...)
			return out
		}
		out = append(out, a)
	}
	return append(out, "-front", "off")
}

// relayCommand is the relay in front of one C child, on a free port: the issue's "minimal C
// relay in front of a minimal C child".
func relayCommand() []string {
	return []string{cRelayBin, "-addr", "127.0.0.1:0", "--", cChildBin}
}

// Hop is the cost of the hop itself, measured in the same repetitions as everything else and
// shared by every language: the relay, the watchdog in front of the C child (its front on, the
// default), the same with its front off (net/http only), the watchdog in front of the Go limit
// child (the second point: a child reading blocking pipes), and the bare Go server (net/http,
// no child at all).
type Hop struct {
	Relay     ByWorkload `json:"relay"`
	WatchdogC ByWorkload `json:"watchdog_c_child"`
	// WatchdogCNetHTTP is the watchdog with -front off. omitempty: a run from before the front
	// has none, and code that reads latest.json into an older Hop ignores it.
	WatchdogCNetHTTP ByWorkload `json:"watchdog_c_child_net_http,omitempty"`
	Limit            ByWorkload `json:"limit"`
	Ceiling          ByWorkload `json:"ceiling"`
	// Ratios are each of the others' requests/s over the relay's, per repetition (Of names
	// the configuration).
	Ratios []Ratio `json:"ratios"`
	// FrontRatios are the watchdog's requests/s with its front over its requests/s with net/http
	// only, per repetition (Of WatchdogC, Baseline WatchdogCNetHTTP): what the front saves. Apart
	// from Ratios, whose baseline is always the relay.
	FrontRatios []Ratio `json:"front_over_net_http,omitempty"`
	// Targets are the watchdog's goals against the relay (issue 29).
	Targets []Target `json:"targets"`
}

func (h *Hop) mode(m Mode) ByWorkload {
	switch m {
	case Relay:
		return h.Relay
	case WatchdogC:
		return h.WatchdogC
	case WatchdogCNetHTTP:
		return h.WatchdogCNetHTTP
	case Limit:
		return h.Limit
	case Ceiling:
		return h.Ceiling
	default:
		return nil
	}
}

// Mode returns the figures of one of the hop's configurations (for reports).
func (h *Hop) Mode(m Mode) ByWorkload { return h.mode(m) }

// HopModes are the hop's configurations in report order.
var HopModes = []Mode{Relay, WatchdogC, WatchdogCNetHTTP, Limit, Ceiling}

// watchdogRelayGoal is issue 29's (a front of the watchdog's own, §10.6), in place of issue
// 18's 0.85 and 0.5: the watchdog in front of the C child, with its front on as deployed, at
// least this fraction of the relay's requests/s, per concurrency, for every workload (hello
// and echo1k). The net/http-only watchdog is measured beside it and not judged.
var watchdogRelayGoal = map[string]float64{"c1": 0.9, "c8": 0.6}

func newHop(byKey map[string]ByWorkload) *Hop {
	h := &Hop{Relay: byKey[string(Relay)], WatchdogC: byKey[string(WatchdogC)], WatchdogCNetHTTP: byKey[string(WatchdogCNetHTTP)],
		Limit: byKey[string(Limit)], Ceiling: byKey[string(Ceiling)]}
	if h.Relay == nil {
		return nil
	}
	for _, of := range HopModes[1:] {
		for _, w := range []Workload{Hello, Echo1K} {
			for _, c := range []string{"c1", "c8"} {
				if s, ok := perRepetition(h.mode(of)[w][c], h.Relay[w][c]); ok {
					h.Ratios = append(h.Ratios, Ratio{Of: of, Baseline: Relay, Workload: w, Concurrency: c, Ratio: s})
				}
			}
		}
	}
	for _, w := range []Workload{Hello, Echo1K} {
		for _, c := range []string{"c1", "c8"} {
			if s, ok := perRepetition(h.WatchdogC[w][c], h.WatchdogCNetHTTP[w][c]); ok {
				h.FrontRatios = append(h.FrontRatios, Ratio{Of: WatchdogC, Baseline: WatchdogCNetHTTP, Workload: w, Concurrency: c, Ratio: s})
			}
		}
	}
	for _, r := range h.Ratios {
		if goal, ok := watchdogRelayGoal[r.Concurrency]; ok && r.Of == WatchdogC {
			h.Targets = append(h.Targets, Target{
				Name:  fmt.Sprintf("%s %s watchdog + C child ÷ relay", r.Workload, r.Concurrency),
				Value: r.Ratio.Median, Min: r.Ratio.Min, Max: r.Ratio.Max,
				Goal: fmt.Sprintf(">= %g", goal), Met: r.Ratio.Median >= goal,
			})
		}
	}
	return h
}

// FindRatio returns the hop's ratio of one configuration to the relay.
func (h *Hop) FindRatio(of Mode, w Workload, c string) (Spread, bool) {
	return findIn(h.Ratios, of, w, c)
}

// FrontRatio returns the watchdog's requests/s with its front over its requests/s with
// net/http only.
func (h *Hop) FrontRatio(w Workload, c string) (Spread, bool) {
	return findIn(h.FrontRatios, WatchdogC, w, c)
}

func findIn(rs []Ratio, of Mode, w Workload, c string) (Spread, bool) {
	for _, r := range rs {
		if r.Of == of && r.Workload == w && r.Concurrency == c {
			return r.Ratio, true
		}
	}
	return Spread{}, false
}

// perRepetition is a's requests/s over b's, paired by repetition (the two ran in the same
// one), as a median with its spread; false unless both ran in every repetition.
func perRepetition(a, b *Figures) (Spread, bool) {
	if a == nil || b == nil || len(a.Runs) != len(b.Runs) || len(a.Runs) == 0 {
		return Spread{}, false
	}
	var rs []float64
	for i := range a.Runs {
		rs = append(rs, a.Runs[i].RPS/b.Runs[i].RPS)
	}
	return spreadOf(rs), true
}

// LibraryCPU is a language's CPU per request above the C child's: the whole tree of the
// watchdog and the language's function, less the whole tree of the watchdog and the C child,
// paired by repetition. The watchdog's own cost cancels out; what remains is the library's
// and its runtime's.
type LibraryCPU struct {
	Of          string   `json:"of"` // OfAfterBurn or "afterburn-<variant>"
	Workload    Workload `json:"workload"`
	Concurrency string   `json:"concurrency"`
	AfterBurnUs Spread   `json:"afterburn_us"`
	CChildUs    Spread   `json:"c_child_us"`
	AboveUs     Spread   `json:"above_us"`
}

// libraryCPU is every AfterBurn configuration's (the plain handler's, then each variant's).
func libraryCPU(l *LanguageResults) []LibraryCPU {
	var out []LibraryCPU
	for _, cfg := range l.afterburnConfigs() {
		for _, w := range []Workload{Hello, Echo1K} {
			for _, c := range []string{"c1", "c8"} {
				ab, cc := cfg.figs[w][c], l.WatchdogC[w][c]
				if ab == nil || cc == nil || len(ab.Runs) != len(cc.Runs) {
					continue
				}
				var a, b, d []float64
				for i := range ab.Runs {
					if ab.Runs[i].Host == nil || cc.Runs[i].Host == nil {
						continue
					}
					x, y := ab.Runs[i].Host.Tree.CPUus, cc.Runs[i].Host.Tree.CPUus
					a, b, d = append(a, x), append(b, y), append(d, x-y)
				}
				if len(d) > 0 {
					out = append(out, LibraryCPU{Of: cfg.of, Workload: w, Concurrency: c,
						AfterBurnUs: spreadOf(a), CChildUs: spreadOf(b), AboveUs: spreadOf(d)})
				}
			}
		}
	}
	return out
}
