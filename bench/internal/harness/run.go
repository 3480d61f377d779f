// Package harness runs the AfterBurn benchmarks: every language's function under the
// watchdog and under the baselines of the benchmark issue, driven by wrk, side by side in one
// run, with repetitions interleaved so drift on a shared machine hits every configuration
// alike.
package harness

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"runtime"
	"strings"
	"time"
)

// Options configure one run.
type Options struct {
	Root       string // repository root; every command runs from here
	Watchdog   string // the watchdog binary, relative to Root
	Langs      []string
	Workloads  []Workload
	Conns      []int
	Reps       int
	Duration   time.Duration // one measured wrk run
	Warmup     time.Duration // unmeasured load on every configuration before the first rep
	ServerCPU  string        // taskset list for everything under test
	LoadCPU    string        // taskset list for wrk
	Workers    int
	ColdReps   int
	LargeBytes int64 // 0 skips the large-body measurement
	Quick      bool
	Log        io.Writer
	// Fork is the fork-mode scenario (forkmode.go); nil skips it. With no Langs, it and Lanes
	// are all that runs.
	Fork *ForkModeOptions
	// Lanes is the lanes scenario (lanes.go); nil skips it.
	Lanes *LanesOptions
	// Isolation is the isolation scenario (isolation.go); nil skips it.
	Isolation *IsolationOptions
	// Front is the front scenario (front.go); nil skips it.
	Front *FrontOptions
}

// config is one thing under test, started once and measured in every repetition.
type config struct {
	key     string // "go/afterburn", "limit", "ceiling"
	program string // the name its "listening on" log line starts with
	argv    []string
	env     []string
	pool    bool // a watchdog: wait for /_/ready too
	warmup  time.Duration
	srv     *server
	figs    ByWorkload
}

// Run measures everything and returns the results. The scenarios run one after the other
// (runScenarios): when one fails, or the run is interrupted (ctx), Run returns the results of
// the scenarios that completed, marked partial (Results.Failure), together with the error; a
// benchmark that stopped after 90 minutes of measuring keeps them. It returns no results when
// nothing completed.
func Run(ctx context.Context, o Options) (*Results, error) {
	var langs []Language
	for _, l := range Languages(o.Root) {
		for _, want := range o.Langs {
			if l.Name == want {
				if err := l.checkBuilt(o.Root); err != nil {
					return nil, err
				}
				langs = append(langs, l)
			}
		}
	}
	if len(langs) != len(o.Langs) {
		return nil, fmt.Errorf("unknown language in %v", o.Langs)
	}
	tmp, err := os.MkdirTemp("", "afterburn-bench-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	script, err := writeEchoScript(tmp)
	if err != nil {
		return nil, err
	}
	load := Load{CPU: o.LoadCPU, ScriptPath: script}

	names, err := peerNames(o.Root, langs)
	if err != nil {
		return nil, err
	}
	configs, err := buildConfigs(o, langs)
	if err != nil {
		return nil, err
	}
	defer stopAll(configs) // after an error; stopped by the languages scenario otherwise
	// The languages scenario's configurations start before the guard, which calibrates with
	// every configuration frozen; nothing has been measured yet if one fails to start.
	if err := startWarmed(ctx, o, load, configs); err != nil {
		return nil, err
	}
	guard, err := newQuietGuard(DefaultQuietThresholds, o.ServerCPU, o.LoadCPU, o.Log) // quiet.go
	if err != nil {
		return nil, err
	}
	guard.ctx = ctx // an interrupt ends the run before its next measured run

	var steps []scenario
	if len(langs) > 0 {
		steps = append(steps, scenario{"languages", func() (func(*Results), error) {
			return measureLanguages(ctx, o, load, guard, langs, configs, names)
		}})
	}
	if o.Lanes != nil {
		steps = append(steps, scenario{"lanes", func() (func(*Results), error) {
			l, err := measureLanes(ctx, o, load, guard)
			return func(r *Results) { r.Lanes = l }, err
		}})
	}
	if o.Fork != nil {
		steps = append(steps, scenario{"fork", func() (func(*Results), error) {
			f, err := measureForkMode(ctx, o, load, guard)
			return func(r *Results) { r.ForkMode = f }, err
		}})
	}
	if o.Isolation != nil {
		steps = append(steps, scenario{"isolation", func() (func(*Results), error) {
			iso, err := measureIsolation(ctx, o, load, guard)
			return func(r *Results) { r.Isolation = iso }, err
		}})
	}
	if o.Front != nil {
		steps = append(steps, scenario{"front", func() (func(*Results), error) {
			f, err := measureFront(ctx, o, load, guard)
			return func(r *Results) { r.Front = f }, err
		}})
	}
	res := &Results{
		Quick:     o.Quick,
		Placement: placement(o),
		Machine:   machine(),
		Duration:  o.Duration.String(),
		Reps:      o.Reps,
		Workers:   o.Workers,
		Languages: map[string]*LanguageResults{},
	}
	if res, err = runScenarios(ctx, res, steps); res == nil {
		return nil, err
	}
	res.Date = time.Now().UTC().Format(time.RFC3339)
	// Every kept run of the session, the failed scenario's too: the guard judges the machine
	// over the whole session.
	res.Quiet = guard.summary()
	return res, err
}

// scenario is one of a run's scenarios, named as -scenarios names it. measure measures it
// and returns what puts its figures into the results, which runScenarios applies only if it
// completed.
type scenario struct {
	name    string
	measure func() (keep func(*Results), err error)
}

// runScenarios measures steps in order into res. The first that fails (or, after an
// interrupt, the next one due) ends the run: res.Failure names it, with its error and the
// scenarios that completed before it and did not run after it; res is returned with the error,
// prefixed with the scenario's name, or no results if the first scenario failed: nothing was
// measured. A failed scenario's figures are dropped, not kept: whatever it measured before it
// failed is some of its repetitions, which would read as a whole scenario's medians and ratios.
func runScenarios(ctx context.Context, res *Results, steps []scenario) (*Results, error) {
	var done []string
	for i, s := range steps {
		keep, err := func() (func(*Results), error) {
			if err := ctx.Err(); err != nil {
				return nil, fmt.Errorf("interrupted before it started: %v", err)
			}
			return s.measure()
		}()
		if err != nil {
			err = fmt.Errorf("%s: %v", s.name, err)
			res.Failure = &Failure{Scenario: s.name, Error: err.Error(), Interrupted: ctx.Err() != nil, Completed: done}
			for _, later := range steps[i+1:] {
				res.Failure.NotRun = append(res.Failure.NotRun, later.name)
			}
			if len(done) == 0 {
				return nil, err
			}
			return res, err
		}
		keep(res)
		done = append(done, s.name)
	}
	return res, nil
}

// measureLanguages measures the languages scenario: its configurations, started by
// startWarmed, in o.Reps interleaved repetitions (stopped after them), then each language's
// cold start and large body. It runs before every other scenario and completes whole, cold
// start and large body too, before the next one starts, so that a later scenario's failure
// leaves it complete.
func measureLanguages(ctx context.Context, o Options, load Load, guard *quietGuard, langs []Language,
	configs []*config, names map[string]map[string]string) (func(*Results), error) {
	if err := measureRepetitions(o, load, guard, func(int) []*config { return configs }, 16); err != nil {
		return nil, err
	}
	stopAll(configs)
	byKey := map[string]ByWorkload{}
	for _, c := range configs {
		byKey[c.key] = c.figs
	}
	byLang := map[string]*LanguageResults{}
	for _, l := range langs {
		lr := &LanguageResults{
			AfterBurn: byKey[l.Name+"/afterburn"], Fork: byKey[l.Name+"/fork"], Proxy: byKey[l.Name+"/proxy"],
			Limit: byKey["limit"], Ceiling: byKey["ceiling"], Floor: byKey[l.Name+"/floor"],
			Relay: byKey[string(Relay)], WatchdogC: byKey[string(WatchdogC)],
		}
		var err error
		fmt.Fprintf(o.Log, "cold start %s (%d × with and without the library)\n", l.Name, o.ColdReps)
		if lr.ColdStart, err = measureColdStart(o.Root, l, o.ColdReps); err != nil {
			return nil, err
		}
		if o.LargeBytes > 0 {
			fmt.Fprintf(o.Log, "large body %s (%d MiB echoed)\n", l.Name, o.LargeBytes>>20)
			if lr.LargeBody, err = measureLargeBody(ctx, o.Root, o.ServerCPU, o.LoadCPU, o.Watchdog, l, o.LargeBytes); err != nil {
				return nil, err
			}
		}
		lr.Peers, lr.Variants = peerResults(l, byKey, names[l.Name]), variantResults(l, byKey)
		lr.Ratios = ratios(lr)
		lr.PeerRatios, lr.Headline = peerRatios(lr), headlines(lr)
		lr.LibraryCPU = libraryCPU(lr)
		lr.Targets = targets(l.Name, lr)
		lr.FloorTargets = floorTargets(l.Name, lr)
		byLang[l.Name] = lr
	}
	return func(r *Results) {
		r.Order, r.Languages, r.Hop = o.Langs, byLang, newHop(byKey)
	}, nil
}

func conc(n int) string { return fmt.Sprintf("c%d", n) }

// buildConfigs lists every configuration of a run of the languages langs, in the order they
// are started and measured: the shared ones (the limit, the ceiling, the hop's), then per
// language AfterBurn and its variants, the proxy, fork, floor, and every peer behind the proxy
// and alone.
func buildConfigs(o Options, langs []Language) ([]*config, error) {
	watchdog := func(child []string) []string { return watchdogArgv(o, child) } // front.go
	proxy := func(server []string) []string {
		return append([]string{"bench/bin/http-proxy", "-addr", "127.0.0.1:0", "--"}, server...)
	}
	var configs []*config
	if len(langs) > 0 {
		configs = []*config{
			{key: "limit", program: "afterburn-watchdog", argv: watchdog([]string{"bench/bin/limit-child"}), pool: true},
			{key: "ceiling", program: "server", argv: []string{"bench/bin/go-server"}, env: []string{"PORT=0"}},
		}
		hop, err := hopConfigs(o.Root, watchdog) // relay.go
		if err != nil {
			return nil, err
		}
		configs = append(configs, hop...)
	}
	workers := fmt.Sprintf("WORKERS=%d", o.Workers) // a peer's $WORKERS (gunicorn's --workers)
	for _, l := range langs {
		configs = append(configs,
			&config{key: l.Name + "/afterburn", program: "afterburn-watchdog", argv: watchdog(l.AfterBurn), pool: true, warmup: l.Warmup})
		for _, v := range l.Variants {
			configs = append(configs, &config{key: l.Name + "/afterburn-" + v.Key, program: "afterburn-watchdog",
				argv: watchdog(v.Worker), env: v.Env, pool: true, warmup: l.Warmup})
		}
		configs = append(configs,
			&config{key: l.Name + "/proxy", program: "http-proxy", argv: proxy(l.Server), env: []string{workers}, warmup: l.Warmup},
			&config{key: l.Name + "/fork", program: "fork-server", argv: append([]string{"bench/bin/fork-server", "-addr", "127.0.0.1:0", "--"}, l.Classic...)},
		)
		if l.Floor != nil {
			configs = append(configs, &config{key: l.Name + "/floor", program: "afterburn-watchdog", argv: watchdog(l.Floor), pool: true, warmup: l.Warmup})
		}
		for _, p := range l.Peers {
			server := p.Server
			if p.Own {
				server = l.Server
			} else {
				configs = append(configs, &config{key: peerKey(l.Name, "proxy", p.Key), program: "http-proxy",
					argv: proxy(server), env: []string{workers}, warmup: l.Warmup})
			}
			if !p.Stdlib && p.AloneKey == "" {
				// No "listening on" line of ours: the harness gives it $PORT and waits until
				// the port accepts connections (process.go).
				configs = append(configs, &config{key: peerKey(l.Name, "alone", p.Key), argv: server,
					env: []string{workers}, warmup: l.Warmup})
			}
		}
	}
	return configs, nil
}

// startWarmed starts every configuration of configs in order (config.start), warms each up
// unmeasured with every workload at 8 connections for o.Warmup (outside -quick, at least the
// configuration's own warm-up: a JIT compiles its hot path) and freezes it (freeze.go), so
// that later only the configuration being measured runs. Every scenario whose configurations
// are measured side by side in interleaved repetitions starts them this way.
func startWarmed(ctx context.Context, o Options, load Load, configs []*config) error {
	for _, c := range configs {
		if err := c.start(ctx, o.Root, o.ServerCPU); err != nil {
			return err
		}
		c.figs = newByWorkload()
		fmt.Fprintf(o.Log, "started %s on %s; warming up\n", c.key, c.srv.addr)
		warmup := o.Warmup
		if !o.Quick {
			warmup = max(warmup, c.warmup)
		}
		for _, w := range o.Workloads {
			if _, err := load.Run(c.srv.url(), w, 8, warmup); err != nil && !errors.Is(err, errNoRequests) {
				return fmt.Errorf("%s warm-up: %v", c.key, err)
			}
		}
		if err := c.srv.freeze(); err != nil {
			return err
		}
	}
	return nil
}

// measureRepetitions measures configurations started by startWarmed: in every repetition,
// for each workload and concurrency, every configuration order(rep) lists, in that order,
// once under the quiet-run guard, which thaws it, runs it, freezes it, and runs it again
// while it is noisy (quiet.go). Each run joins the configuration's figures and is logged
// with the key padded to keyWidth, the width of the scenario's keys.
func measureRepetitions(o Options, load Load, guard *quietGuard, order func(rep int) []*config, keyWidth int) error {
	for rep := 1; rep <= o.Reps; rep++ {
		for _, w := range o.Workloads {
			for _, n := range o.Conns {
				for _, c := range order(rep) {
					r, err := guard.measure(c.srv, c.key, w, conc(n), rep, func() (LoadResult, error) {
						return c.srv.measure(load, w, n, o.Duration) // hostcost.go
					})
					if err != nil {
						return fmt.Errorf("%s: %v", c.key, err)
					}
					c.figs.figures(w, conc(n)).add(r)
					fmt.Fprintf(o.Log, "rep %d/%d %-7s c=%d %-*s %9.0f req/s  p50 %7.0f µs  p99 %7.0f µs  errors %d  %s\n",
						rep, o.Reps, w, n, keyWidth, c.key, r.RPS, r.P50us, r.P99us, r.Errors, r.Guard.Brief())
				}
			}
		}
	}
	return nil
}

// peerKey names a peer's configuration: <lang>/<via>/<peer>, via "proxy" or "alone".
func peerKey(lang, via, peer string) string { return lang + "/" + via + "/" + peer }

// start starts a configuration, waits until it serves (a watchdog: every worker ready), and
// checks its answers.
func (c *config) start(ctx context.Context, root, cpu string) error {
	startCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	var err error
	if c.program == "" {
		c.srv, err = startListener(startCtx, c.key, root, cpu, c.argv, c.env)
	} else {
		c.srv, err = startServer(startCtx, c.key, c.program, root, cpu, c.argv, c.env)
	}
	if err == nil && c.pool {
		err = c.srv.waitReady(startCtx)
	}
	if err != nil {
		return err
	}
	if err := verify(c.srv); err != nil {
		return fmt.Errorf("%s answers wrongly: %v\n%s", c.key, err, c.srv.log.String())
	}
	return nil
}

// peerResults gathers a language's peers' figures from the configurations that measured
// them: an Own peer behind the proxy is the proxy column, one with an AloneKey alone is that
// configuration.
func peerResults(l Language, byKey map[string]ByWorkload, names map[string]string) []*PeerResults {
	var out []*PeerResults
	for _, p := range l.Peers {
		pr := &PeerResults{Key: p.Key, Name: names[p.Key], Setup: p.Setup, Stdlib: p.Stdlib, Own: p.Own,
			Proxy: byKey[peerKey(l.Name, "proxy", p.Key)], Alone: byKey[peerKey(l.Name, "alone", p.Key)]}
		if p.Own {
			pr.Proxy = byKey[l.Name+"/proxy"]
		}
		if p.AloneKey != "" {
			pr.Alone = byKey[p.AloneKey]
		}
		out = append(out, pr)
	}
	return out
}

func variantResults(l Language, byKey map[string]ByWorkload) []*VariantResults {
	var out []*VariantResults
	for _, v := range l.Variants {
		out = append(out, &VariantResults{Key: v.Key, Setup: v.Setup, SameAppAs: v.SameAppAs, Headline: v.Headline,
			Label: v.Label, Goal: v.Goal, CPUGoal: v.CPUGoal,
			Figures: byKey[l.Name+"/afterburn-"+v.Key]})
	}
	return out
}

// verify checks that a configuration does the work before it is timed: a benchmark of a
// server that answers wrongly measures nothing.
func verify(s *server) error {
	resp, err := http.Get(s.url())
	if err != nil {
		return err
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(got) != "Hello, world!\n" {
		return fmt.Errorf("GET / = %d %q; want 200 %q", resp.StatusCode, got, "Hello, world!\n")
	}
	body := strings.Repeat("abcdefghijklmnop", 64)
	resp, err = http.Post(s.url(), "application/octet-stream", strings.NewReader(body))
	if err != nil {
		return err
	}
	got, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(got) != body {
		return fmt.Errorf("POST / of 1 KiB = %d, %d bytes; want 200 and the body echoed", resp.StatusCode, len(got))
	}
	return nil
}

func placement(o Options) string {
	if len(o.Langs) == 0 {
		front := ""
		if o.Front != nil {
			front = fmt.Sprintf(" (the front scenario's watchdogs: %d workers each)", o.Workers)
		}
		return fmt.Sprintf("wrk (1 thread) pinned to CPU %s; every watchdog and worker pinned to CPU %s (taskset); "+
			"the lanes and fork-mode pools' workers as their tables say%s; every pool but the one measured frozen (SIGSTOP, whole process tree)",
			orNone(o.LoadCPU), orNone(o.ServerCPU), front)
	}
	return fmt.Sprintf("wrk (1 thread) pinned to CPU %s; every server, watchdog, worker, proxy and forked "+
		"function pinned to CPU %s (taskset); %d watchdog workers; every configuration but the one "+
		"measured frozen (SIGSTOP, whole process tree); cold starts unpinned",
		orNone(o.LoadCPU), orNone(o.ServerCPU), o.Workers)
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

func machine() string {
	model := "unknown CPU"
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "model name"); ok {
				model = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(v), ":"))
				break
			}
		}
	}
	return fmt.Sprintf("%s, %d CPUs, %s/%s, %s", model, runtime.NumCPU(), runtime.GOOS, runtime.GOARCH, runtime.Version())
}
