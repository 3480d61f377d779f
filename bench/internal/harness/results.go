package harness

// Workload is what each request asks of the function.
type Workload string

const (
	Hello  Workload = "hello"  // GET with no body; the function answers a greeting
	Echo1K Workload = "echo1k" // POST of 1 KiB; the function answers it back
)

// Mode is one column of the seed's table: how a request reaches the function.
type Mode string

const (
	AfterBurn Mode = "afterburn"  // the watchdog and the library
	Fork      Mode = "fork"       // the function started for every request
	Proxy     Mode = "proxy"      // a reverse proxy to the language's own HTTP server
	Limit     Mode = "limit"      // the watchdog and a child answering canned bytes
	Ceiling   Mode = "ceiling"    // a bare Go net/http server, no child at all
	Floor     Mode = "floor"      // the watchdog and the thinnest worker on the library's dependencies
	Relay     Mode = "relay"      // the C relay and the C child: the hop's physical limit (relay.go)
	WatchdogC Mode = "watchdog-c" // the watchdog and the C child: the watchdog's own cost (relay.go)
	// WatchdogCNetHTTP is the same watchdog and C child with -front off: every request through
	// net/http, none through the watchdog's own front (PROTOCOL.md §10.6; relay.go).
	WatchdogCNetHTTP Mode = "watchdog-c-net-http"
)

// Modes in report order.
var Modes = []Mode{AfterBurn, Fork, Proxy, Limit, Ceiling}

// Figures are the repetitions of one configuration, with their medians and spreads.
type Figures struct {
	RPS    Spread       `json:"rps"`
	P50us  Spread       `json:"p50_us"`
	P99us  Spread       `json:"p99_us"`
	Errors int          `json:"errors"`
	Runs   []LoadResult `json:"runs"`
	// Host is what the configuration's processes spent per request (hostcost.go).
	Host *HostSpread `json:"host,omitempty"`
}

func (f *Figures) add(r LoadResult) {
	f.Runs = append(f.Runs, r)
	f.Errors += r.Errors
	var rps, p50, p99 []float64
	for _, r := range f.Runs {
		rps, p50, p99 = append(rps, r.RPS), append(p50, r.P50us), append(p99, r.P99us)
	}
	f.RPS, f.P50us, f.P99us = spreadOf(rps), spreadOf(p50), spreadOf(p99)
	f.Host = hostSpread(f.Runs)
}

// ByConcurrency keys figures by "c1", "c8".
type ByConcurrency map[string]*Figures

// ByWorkload keys figures by workload.
type ByWorkload map[Workload]ByConcurrency

// LanguageResults is everything measured for one language. limit and ceiling are the same
// shared measurements in every language, repeated so each language's entry stands alone.
type LanguageResults struct {
	AfterBurn ByWorkload `json:"afterburn"`
	Fork      ByWorkload `json:"fork"`
	Proxy     ByWorkload `json:"proxy"`
	Limit     ByWorkload `json:"limit"`
	Ceiling   ByWorkload `json:"ceiling"`
	// Relay and WatchdogC are the C relay and the watchdog in front of the C child, shared
	// like limit and ceiling (relay.go). LibraryCPU is the library's own CPU per request
	// above the C child's.
	Relay      ByWorkload   `json:"relay,omitempty"`
	WatchdogC  ByWorkload   `json:"watchdog_c_child,omitempty"`
	LibraryCPU []LibraryCPU `json:"library_cpu_us_above_c_child,omitempty"`
	// Floor is measured for a language whose Language.Floor is set; FloorTargets are the
	// throughput and tail goals applied to the floor in AfterBurn's place.
	Floor        ByWorkload `json:"floor,omitempty"`
	FloorTargets []Target   `json:"floor_targets,omitempty"`
	// Peers are the servers its users would run instead, each named with its version, behind
	// the proxy and alone; Variants are AfterBurn's other configurations (peers.go).
	// Headline is AfterBurn over the strongest peer behind the proxy: the report's headline.
	Peers      []*PeerResults    `json:"peers,omitempty"`
	Variants   []*VariantResults `json:"afterburn_variants,omitempty"`
	PeerRatios []PeerRatio       `json:"peer_ratios,omitempty"`
	Headline   []Headline        `json:"headline,omitempty"`
	ColdStart  *ColdStart        `json:"cold_start,omitempty"`
	LargeBody  *LargeBody        `json:"large_body,omitempty"`
	Ratios     []Ratio           `json:"ratios"`
	Targets    []Target          `json:"targets"`
}

func (l *LanguageResults) mode(m Mode) ByWorkload {
	switch m {
	case AfterBurn:
		return l.AfterBurn
	case Fork:
		return l.Fork
	case Proxy:
		return l.Proxy
	case Limit:
		return l.Limit
	case Floor:
		return l.Floor
	case Relay:
		return l.Relay
	case WatchdogC:
		return l.WatchdogC
	default:
		return l.Ceiling
	}
}

// Mode returns the figures of one mode (for reports).
func (l *LanguageResults) Mode(m Mode) ByWorkload { return l.mode(m) }

// Ratio is AfterBurn's throughput over a baseline's, per repetition (the two ran in the same
// repetition, one after the other), as a median with its spread.
type Ratio struct {
	// Of is the configuration over the baseline; empty for AfterBurn.
	Of          Mode     `json:"of,omitempty"`
	Baseline    Mode     `json:"baseline"`
	Workload    Workload `json:"workload"`
	Concurrency string   `json:"concurrency"`
	Ratio       Spread   `json:"ratio"`
}

// Target is one of the goals of the benchmark issue, checked against this run.
type Target struct {
	Name  string  `json:"name"`
	Value float64 `json:"value"`
	Min   float64 `json:"min"`
	Max   float64 `json:"max"`
	Goal  string  `json:"goal"`
	Met   bool    `json:"met"`
}

// Results is one whole run of the benchmarks.
type Results struct {
	Date      string                      `json:"date"`
	Quick     bool                        `json:"quick"`
	Placement string                      `json:"placement"`
	Machine   string                      `json:"machine"`
	Duration  string                      `json:"duration_per_run"`
	Reps      int                         `json:"repetitions"`
	Workers   int                         `json:"workers"`
	Order     []string                    `json:"languages_order"`
	Languages map[string]*LanguageResults `json:"languages"`
	// Hop is the watchdog's own cost against the C relay, shared by every language.
	Hop   *Hop          `json:"hop,omitempty"`
	Quiet *QuietSummary `json:"quiet_guard,omitempty"` // quiet.go
	// ForkMode is the fork-mode scenario (forkmode.go), nil when it did not run.
	ForkMode *ForkMode `json:"fork_mode,omitempty"`
	// Lanes is the lanes scenario (lanes.go), nil when it did not run.
	Lanes *Lanes `json:"lanes,omitempty"`
	// Isolation is the isolation scenario (isolation.go), nil when it did not run.
	Isolation *Isolation `json:"isolation,omitempty"`
	// Front is the front scenario (front.go), nil when it did not run.
	Front *Front `json:"front,omitempty"`
	// Failure is the scenario that ended the run early (run.go: runScenarios), nil when every
	// scenario completed. Its figures, and those of the scenarios after it, are not here.
	Failure *Failure `json:"failure,omitempty"`
}

// Failure is why a run is partial: the scenario that failed or was interrupted, its error,
// and which scenarios completed before it (their figures are in the results) and which did not
// run after it.
type Failure struct {
	Scenario    string   `json:"scenario"`
	Error       string   `json:"error"`
	Interrupted bool     `json:"interrupted,omitempty"` // SIGINT or SIGTERM
	Completed   []string `json:"completed"`
	NotRun      []string `json:"not_run,omitempty"`
}

// Partial reports whether a scenario failed or the run was interrupted: such a run is
// written as <stamp>-partial.* and never published as latest.
func (r *Results) Partial() bool { return r.Failure != nil }

// Noisy reports whether a run stayed over the quiet-run guard's thresholds: such a session
// is not published as latest.
func (r *Results) Noisy() bool { return r.Quiet.IsNoisy() }

func newByWorkload() ByWorkload { return ByWorkload{} }

func (b ByWorkload) figures(w Workload, conc string) *Figures {
	if b[w] == nil {
		b[w] = ByConcurrency{}
	}
	if b[w][conc] == nil {
		b[w][conc] = &Figures{}
	}
	return b[w][conc]
}
