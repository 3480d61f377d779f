package harness

import (
	"context"
	"errors"
	"fmt"
	"slices"
)

// The front scenario (issue 29, PROTOCOL.md §10.6): every language's AfterBurn configuration,
// at the library's defaults, twice, with the watchdog's own front (the default) and with
// -front off (every request through net/http), beside the hop's watchdog + C child both ways
// (hopConfigs' watchdog-c and watchdog-c-net-http), all started at once and measured in the
// same interleaved repetitions. The watchdog in front of the C child shows what the front
// saves the watchdog itself; each language's pair shows how much of that reaches the
// language's figure.

// FrontOptions configure the front scenario; nil in Options skips it.
type FrontOptions struct {
	Langs []string
}

// FrontCChild is the key of the C child's pair in Front.
const FrontCChild = "c-child"

// FrontCChildBusy is the key of the slower C child's pair: the same C child, keeping its CPU
// busy for frontBusyNs before each answer (C_CHILD_BUSY_NS), behind the same two watchdog
// command lines. It shows how the watchdog's saving moves with the request rate, at a
// slower language's, with a worker that does no more than the C child's work otherwise;
// reported beside the C child's, not judged: the languages are judged against the C child.
const FrontCChildBusy = "c-child-busy"

// frontBusyNs is the slower C child's extra CPU per answer: it brings the C child's rate at
// c=8 with -front off to 0.7-0.8 × its own, the JVM's share.
const frontBusyNs = 4000

// frontKeyPrefix starts the keys of the scenario's configurations, apart from the languages
// scenario's and the hop's of the same command lines.
const frontKeyPrefix = "front/"

// netHTTPSuffix ends the key of a language's -front off configuration: "go/afterburn-net-http".
const netHTTPSuffix = "-net-http"

// FrontPair is one worker behind the watchdog both ways.
type FrontPair struct {
	// Key is FrontCChild or a language's name; FrontKey and NetHTTPKey name its two
	// configurations in the log and the quiet-run guard's records ("front/go/afterburn",
	// "front/go/afterburn-net-http"; the C child's "front/watchdog-c" and
	// "front/watchdog-c-net-http"), apart from the languages scenario's in a run of both.
	Key        string `json:"key"`
	FrontKey   string `json:"front_key"`
	NetHTTPKey string `json:"net_http_key"`
	// FrontCommand and NetHTTPCommand are the two watchdog command lines: the same but for
	// "-front off" before the "--" that starts the worker's command.
	FrontCommand   []string `json:"front_command"`
	NetHTTPCommand []string `json:"net_http_command"`
	// Env is what both commands have in their environment beyond the harness's
	// (C_CHILD_BUSY_NS for the slower C child).
	Env     []string   `json:"env,omitempty"`
	Front   ByWorkload `json:"front"`
	NetHTTP ByWorkload `json:"net_http"`
	// Compare are the per-repetition comparisons of the two, by workload and concurrency.
	Compare []FrontCompare `json:"compare"`
}

// FrontCompare compares a pair at one workload and concurrency, every figure computed per
// repetition (the two ran in the same one) and then summarised as a median with its spread.
type FrontCompare struct {
	Workload    Workload `json:"workload"`
	Concurrency string   `json:"concurrency"`
	// RPSRatio is requests/s with the front over requests/s with -front off.
	RPSRatio Spread `json:"rps_front_over_net_http"`
	// TimeSavedUs is what the front takes off the time per request of the figure:
	// 1e6/req/s with -front off less 1e6/req/s with the front. With everything under test on
	// one CPU, saturated at c=8, that is the measured CPU's time per request.
	TimeSavedUs Spread `json:"time_saved_us"`
	// TreeCPUSavedUs and WatchdogCPUSavedUs are CPU µs per request (/proc, hostcost.go) with
	// -front off less with the front: the whole tree's (watchdog and workers) and the
	// watchdog process's alone. N 0 when no run carried a host cost.
	TreeCPUSavedUs     Spread `json:"tree_cpu_saved_us"`
	WatchdogCPUSavedUs Spread `json:"watchdog_cpu_saved_us"`
	// LoadWakesAvoided are wrk's wake-ups per request (HostCost.LoadWakeIPIs) with -front off
	// less with the front: how many fewer times a response found the client asleep. N 0 when
	// a run did not count them.
	LoadWakesAvoided Spread `json:"load_wakes_avoided"`
}

// FrontLanguage is a language's pair, with how its rise compares with the watchdog's saving.
type FrontLanguage struct {
	FrontPair
	// RiseOverSaving are, per workload at c=8 (FrontGoalConcurrency), the language's
	// TimeSavedUs less the C child's, per repetition: ≥ 0 when the language's figure rose by at
	// least the watchdog's saving.
	RiseOverSaving []FrontRise `json:"rise_over_watchdog_saving"`
	Targets        []Target    `json:"targets"`
}

// FrontRise is a language's rise against the watchdog's saving at one workload.
type FrontRise struct {
	Workload    Workload `json:"workload"`
	Concurrency string   `json:"concurrency"`
	// ExcessUs is the language's time saved per request less the C child's, µs, per repetition.
	ExcessUs Spread `json:"excess_us"`
	// Share is the language's time saved over the C child's, per repetition (the share of
	// the watchdog's saving that reached the language's figure); N 0 when the C child saved
	// nothing in some repetition.
	Share Spread `json:"share"`
	// WakesUs is, per repetition, the language's wrk wake-ups avoided per request less the C
	// child's, times Front.WakeCostUs: the part of ExcessUs that is the client's wake-ups, not
	// the watchdog's work. BesideWakesUs is ExcessUs less it. N 0 when not counted.
	WakesUs       Spread `json:"wakes_us"`
	BesideWakesUs Spread `json:"beside_wakes_us"`
}

// Front is the scenario's results.
type Front struct {
	// CChild is the hop's watchdog + C child, with the front and with -front off: the
	// watchdog's own saving.
	CChild *FrontPair `json:"c_child"`
	// CChildBusy is the watchdog + the slower C child (FrontCChildBusy) both ways: the
	// watchdog's saving at a lower rate, reported. omitempty: runs from before it have none.
	CChildBusy *FrontPair                `json:"c_child_busy,omitempty"`
	Order      []string                  `json:"languages_order"`
	Languages  map[string]*FrontLanguage `json:"languages"`
	// WakeCostUs is what one wake-up of a thread asleep on wrk's CPU costs the CPU under test
	// (wakeCost), µs, measured once before the repetitions; 0 when a CPU list is not given.
	WakeCostUs float64 `json:"wake_cost_us,omitempty"`
}

// FrontGoalConcurrency is the concurrency issue 29's language goal is stated at.
const FrontGoalConcurrency = "c8"

// frontPairConfig is a pair's two configurations.
type frontPairConfig struct {
	key            string
	front, netHTTP *config
}

// watchdogArgv is the watchdog command line every configuration of the languages scenario
// uses around a worker command: a free port, no fixed metrics port (several watchdogs run at
// once and the default, 8081, is one port), the run's -workers.
func watchdogArgv(o Options, child []string) []string {
	return append([]string{o.Watchdog, "-port", "0", "-metrics_port", "0", "-listen_host", "127.0.0.1",
		"-workers", fmt.Sprint(o.Workers), "--"}, child...)
}

// frontConfigs lists the scenario's pairs: the hop's watchdog + C child both ways (the very
// configurations of hopConfigs), then every language's AfterBurn function at the library's
// defaults (Language.AfterBurn, no variant) behind the watchdog of the languages scenario, and
// behind the same command line with -front off.
func frontConfigs(o Options, langs []Language) ([]*frontPairConfig, error) {
	hop, err := hopConfigs(o.Root, func(child []string) []string { return watchdogArgv(o, child) })
	if err != nil {
		return nil, err
	}
	cc := &frontPairConfig{key: FrontCChild}
	for _, c := range hop {
		switch c.key {
		case string(WatchdogC):
			cc.front = c
		case string(WatchdogCNetHTTP):
			cc.netHTTP = c
		}
	}
	if cc.front == nil || cc.netHTTP == nil {
		return nil, errors.New("the hop has no watchdog-c and watchdog-c-net-http configurations")
	}
	busy := &frontPairConfig{key: FrontCChildBusy,
		front: &config{key: string(WatchdogC) + "-busy", program: cc.front.program, argv: slices.Clone(cc.front.argv),
			env: []string{fmt.Sprintf("C_CHILD_BUSY_NS=%d", frontBusyNs)}, pool: true},
		netHTTP: &config{key: string(WatchdogC) + "-busy" + netHTTPSuffix, program: cc.netHTTP.program, argv: slices.Clone(cc.netHTTP.argv),
			env: []string{fmt.Sprintf("C_CHILD_BUSY_NS=%d", frontBusyNs)}, pool: true},
	}
	pairs := []*frontPairConfig{cc, busy}
	for _, l := range langs {
		argv := watchdogArgv(o, l.AfterBurn)
		pairs = append(pairs, &frontPairConfig{key: l.Name,
			front: &config{key: l.Name + "/afterburn", program: "afterburn-watchdog", argv: argv, pool: true, warmup: l.Warmup},
			netHTTP: &config{key: l.Name + "/afterburn" + netHTTPSuffix, program: "afterburn-watchdog",
				argv: netHTTPOnly(slices.Clone(argv)), pool: true, warmup: l.Warmup},
		})
	}
	for _, p := range pairs {
		p.front.key, p.netHTTP.key = frontKeyPrefix+p.front.key, frontKeyPrefix+p.netHTTP.key
	}
	return pairs, nil
}

// sides are a pair's two configurations in the order a repetition measures them: the front
// first in odd repetitions, -front off first in even ones, so that neither always follows the
// other (or the same other configuration).
func (p *frontPairConfig) sides(rep int) []*config {
	if rep%2 == 0 {
		return []*config{p.netHTTP, p.front}
	}
	return []*config{p.front, p.netHTTP}
}

// frontRepetition lists the configurations of repetition rep in the order it measures them:
// pair after pair, each pair's two sides in the order sides gives.
func frontRepetition(pairs []*frontPairConfig, rep int) []*config {
	var out []*config
	for _, p := range pairs {
		out = append(out, p.sides(rep)...)
	}
	return out
}

// measureFront runs the scenario: every pair started, warmed up and frozen, then in every
// repetition, for each workload and concurrency, every configuration once under the quiet-run
// guard (startWarmed and measureRepetitions, as the languages scenario), its pairs in the
// order frontRepetition gives.
func measureFront(ctx context.Context, o Options, load Load, guard *quietGuard) (*Front, error) {
	langs, err := resolveLangs(o.Root, o.Front.Langs)
	if err != nil {
		return nil, err
	}
	pairs, err := frontConfigs(o, langs)
	if err != nil {
		return nil, err
	}
	var all []*config
	for _, p := range pairs {
		all = append(all, p.front, p.netHTTP)
	}
	defer stopAll(all)
	if err := startWarmed(ctx, o, load, all); err != nil {
		return nil, err
	}
	wakeCostUs, err := frontWakeCost(o)
	if err != nil {
		return nil, err
	}
	if err := measureRepetitions(o, load, guard, func(rep int) []*config { return frontRepetition(pairs, rep) }, 24); err != nil {
		return nil, err
	}
	res := &Front{Languages: map[string]*FrontLanguage{}, WakeCostUs: wakeCostUs}
	for _, p := range pairs {
		fp := FrontPair{Key: p.key, FrontKey: p.front.key, NetHTTPKey: p.netHTTP.key, FrontCommand: p.front.argv, NetHTTPCommand: p.netHTTP.argv,
			Env: p.front.env, Front: p.front.figs, NetHTTP: p.netHTTP.figs}
		switch p.key {
		case FrontCChild:
			res.CChild = &fp
			continue
		case FrontCChildBusy:
			res.CChildBusy = &fp
			continue
		}
		res.Order = append(res.Order, p.key)
		res.Languages[p.key] = &FrontLanguage{FrontPair: fp}
	}
	res.Judge()
	return res, nil
}

// frontWakeCost is wakeCost from the first CPU under test to the first of wrk's, in µs; 0
// when either is not pinned.
func frontWakeCost(o Options) (float64, error) {
	server, err := cpuList(o.ServerCPU)
	if err != nil {
		return 0, err
	}
	load, err := cpuList(o.LoadCPU)
	if err != nil {
		return 0, err
	}
	if len(server) == 0 || len(load) == 0 {
		return 0, nil
	}
	d, err := wakeCost(server[0], load[0])
	return float64(d) / 1e3, err
}
