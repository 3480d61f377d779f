package harness

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"time"
)

// Fork mode (issue 19, PROTOCOL.md §2.6): the Python function with a synthetic model
// (functions/python/model_fn.py: ModelMiB MiB of anonymous memory written at start-up) under
// the watchdog in exec mode and in fork mode, at each worker count: the PSS of the whole
// process tree after a fixed number of model requests, hello and model throughput and p99 side
// by side (exec and fork interleaved in every repetition, under the quiet-run guard), and the
// time from a worker's crash to its replacement answering.

// Model is the fork-mode workload: GET /model, which reads a sample of the whole model.
const Model Workload = "model"

// Spawn modes of the watchdog (its -spawn setting).
const (
	SpawnExec = "exec"
	SpawnFork = "fork"
)

// ForkModeOptions configure the fork-mode scenario; nil in Options skips it.
type ForkModeOptions struct {
	ModelMiB int
	Workers  []int
	Requests int // model requests before the tree's PSS is read
	Crashes  int // crashes timed per spawn mode, on the pools of one worker (none without 1 in Workers)
}

// ForkPool is one watchdog: a spawn mode and a number of workers.
type ForkPool struct {
	Spawn   string      `json:"spawn"`
	Workers int         `json:"workers"`
	Memory  *TreeMemory `json:"memory_after_requests"`
	Figures ByWorkload  `json:"figures"`
}

// CrashFigures are the crash-to-answering times of one spawn mode, in ms.
type CrashFigures struct {
	Spawn   string    `json:"spawn"`
	Workers int       `json:"workers"`
	Ms      Spread    `json:"ms"`
	Samples []float64 `json:"samples_ms"`
}

// ForkMode is the scenario's results.
type ForkMode struct {
	ModelMiB int            `json:"model_mib"`
	Requests int            `json:"requests_before_memory"`
	Pools    []*ForkPool    `json:"pools"`
	Crash    []CrashFigures `json:"crash_to_answering"`
	Ratios   []ForkRatio    `json:"fork_over_exec"`
	Targets  []Target       `json:"targets"`
}

// ForkRatio is fork mode's requests/s over exec mode's, per repetition, at one worker count.
type ForkRatio struct {
	Workers     int      `json:"workers"`
	Workload    Workload `json:"workload"`
	Concurrency string   `json:"concurrency"`
	Ratio       Spread   `json:"ratio"`
}

// Pool returns the pool of a spawn mode and worker count, nil if it was not measured.
func (f *ForkMode) Pool(spawn string, workers int) *ForkPool {
	for _, p := range f.Pools {
		if p.Spawn == spawn && p.Workers == workers {
			return p
		}
	}
	return nil
}

// Key names a pool in logs and in the quiet-run guard's records.
func (p *ForkPool) Key() string { return fmt.Sprintf("python/model-%s-w%d", p.Spawn, p.Workers) }

// modelSum is what GET /model answers for a model of mib MiB: the sum of every stride-th
// element of arange(mib × 2^17) with stride = n / samples (model_fn.py).
func modelSum(mib, samples int) int64 {
	n := int64(mib) << 17
	stride := max(1, n/int64(samples))
	k := (n + stride - 1) / stride
	return stride * k * (k - 1) / 2
}

const modelSamples = 1024 // model_fn.py's default MODEL_SAMPLES

// forkPython runs model_fn.py: the dev venv, which has NumPy (python/pyproject.toml's test extra).
const forkPython = "python/.venv/bin/python"

// measureForkMode runs the scenario: per worker count, an exec pool and a fork pool.
func measureForkMode(ctx context.Context, o Options, load Load, guard *quietGuard) (*ForkMode, error) {
	fo := o.Fork
	if _, err := os.Stat(filepath.Join(o.Root, forkPython)); err != nil {
		return nil, fmt.Errorf("python is not built (%s missing): run make bench-build", forkPython)
	}
	res := &ForkMode{ModelMiB: fo.ModelMiB, Requests: fo.Requests}
	for _, n := range fo.Workers {
		pools, configs, err := startForkPools(ctx, o, load, n)
		defer stopAll(configs) // after an error; stopped below otherwise
		if err != nil {
			return nil, err
		}
		for rep := 1; rep <= o.Reps; rep++ {
			for _, w := range []Workload{Hello, Model} {
				for _, c := range o.Conns {
					for i, cfg := range configs {
						r, err := guard.measure(cfg.srv, cfg.key, w, conc(c), rep, func() (LoadResult, error) {
							return cfg.srv.measure(load, w, c, o.Duration)
						})
						if err != nil {
							return nil, fmt.Errorf("%s: %v", cfg.key, err)
						}
						pools[i].Figures.figures(w, conc(c)).add(r)
						fmt.Fprintf(o.Log, "rep %d/%d %-7s c=%d %-22s %9.0f req/s  p50 %7.0f µs  p99 %7.0f µs  errors %d  %s\n",
							rep, o.Reps, w, c, cfg.key, r.RPS, r.P50us, r.P99us, r.Errors, r.Guard.Brief())
					}
				}
			}
		}
		// With one worker only the replacement can answer (crash.go); pools of more are
		// not used for it.
		if n == 1 {
			for i, cfg := range configs {
				cf, err := timeCrashes(cfg, pools[i], fo.Crashes)
				if err != nil {
					return nil, err
				}
				fmt.Fprintf(o.Log, "crash to answering %s: median %.1f ms (%.1f–%.1f) over %d crashes\n",
					cfg.key, cf.Ms.Median, cf.Ms.Min, cf.Ms.Max, cf.Ms.N)
				res.Crash = append(res.Crash, cf)
			}
		}
		stopAll(configs)
		res.Pools = append(res.Pools, pools...)
	}
	res.Ratios = forkRatios(res)
	res.Targets = forkTargets(res)
	return res, nil
}

// startForkPools measures the memory of the exec and the fork pool of n workers, each alone
// (memoryAfterRequests), then starts both again, warms them up and freezes them, for the
// throughput runs.
func startForkPools(ctx context.Context, o Options, load Load, n int) ([]*ForkPool, []*config, error) {
	var pools []*ForkPool
	var configs []*config
	for _, spawn := range []string{SpawnExec, SpawnFork} {
		p := &ForkPool{Spawn: spawn, Workers: n, Figures: newByWorkload()}
		var err error
		if p.Memory, err = memoryAfterRequests(ctx, o, p); err != nil {
			return pools, configs, err
		}
		pools = append(pools, p)
	}
	for _, p := range pools {
		c, err := startPool(ctx, o, p)
		if c != nil {
			configs = append(configs, c)
		}
		if err != nil {
			return pools, configs, err
		}
		fmt.Fprintf(o.Log, "started %s on %s; warming up\n", c.key, c.srv.addr)
		for _, w := range []Workload{Hello, Model} {
			if _, err := load.Run(c.srv.url(), w, 8, o.Warmup); err != nil && err != errNoRequests {
				return pools, configs, fmt.Errorf("%s warm-up: %v", c.key, err)
			}
		}
		if err := c.srv.freeze(); err != nil {
			return pools, configs, err
		}
	}
	return pools, configs, nil
}

// startPool starts the watchdog of p, waits until every worker is ready and checks its answers.
// The config it returns, if any, must be stopped, also after an error.
func startPool(ctx context.Context, o Options, p *ForkPool) (*config, error) {
	c := &config{key: p.Key(), program: "afterburn-watchdog", pool: true,
		argv: []string{o.Watchdog, "-port", "0", "-metrics_port", "0", "-listen_host", "127.0.0.1",
			"-workers", fmt.Sprint(p.Workers), "-spawn", p.Spawn, "--",
			forkPython, "bench/functions/python/model_fn.py"},
		env: []string{fmt.Sprintf("MODEL_MIB=%d", o.Fork.ModelMiB), fmt.Sprintf("MODEL_SAMPLES=%d", modelSamples)},
	}
	startCtx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	var err error
	if c.srv, err = startServer(startCtx, c.key, c.program, o.Root, o.ServerCPU, c.argv, c.env); err != nil {
		return nil, err
	}
	if err := waitAllWorkers(startCtx, c.srv, p.Spawn, p.Workers); err != nil {
		return c, err
	}
	if err := verify(c.srv); err != nil {
		return c, fmt.Errorf("%s answers wrongly: %v\n%s", c.key, err, c.srv.log.String())
	}
	return c, nil
}

// memoryAfterRequests starts p's pool alone (what another pool maps, such as the watchdog's
// binary or libpython, would otherwise halve those pages' share in both), sends o.Fork.Requests
// model requests over one connection per worker, reads the PSS of its whole tree and stops it.
func memoryAfterRequests(ctx context.Context, o Options, p *ForkPool) (*TreeMemory, error) {
	c, err := startPool(ctx, o, p)
	if c != nil {
		defer stopAll([]*config{c})
	}
	if err != nil {
		return nil, err
	}
	fc, err := dialFixed(c.srv.addr, p.Workers)
	if err != nil {
		return nil, err
	}
	want := fmt.Sprintf("{\"sum\": %d}\n", modelSum(o.Fork.ModelMiB, modelSamples))
	err = fc.send(string(Model), []byte("GET /model HTTP/1.1\r\nHost: bench\r\n\r\n"), want, o.Fork.Requests, 10*time.Minute)
	fc.close()
	if err != nil {
		return nil, fmt.Errorf("%s: %v\n%s", c.key, err, c.srv.log.String())
	}
	template := 0
	if p.Spawn == SpawnFork {
		st, err := readyStatus(c.srv)
		if err != nil {
			return nil, err
		}
		template = st.TemplatePID
	}
	root := c.srv.cmd.Process.Pid
	m, err := treeMemory(root, func(pid int) string {
		switch pid {
		case root:
			return "watchdog"
		case template:
			return "template"
		}
		return "worker"
	})
	if err != nil {
		return nil, fmt.Errorf("%s: %v", c.key, err)
	}
	fmt.Fprintf(o.Log, "%s alone: PSS of the tree after %d model requests %.1f MiB (RSS %.1f MiB)\n",
		c.key, o.Fork.Requests, m.PSSMiB, m.RSSMiB)
	return m, nil
}

// stopAll stops every configuration of configs that is running; a scenario defers it for
// the configurations left running after an error.
func stopAll(configs []*config) {
	for _, c := range configs {
		if c.srv != nil {
			c.srv.thaw() // a stopped process would not act on SIGTERM
			c.srv.stop()
			c.srv = nil
		}
	}
}

// readyBody is the part of /_/ready's JSON (PROTOCOL.md §9.2) the scenario reads.
type readyBody struct {
	Idle        int            `json:"idle"`
	Started     map[string]int `json:"started"`
	Template    string         `json:"template"`
	TemplatePID int            `json:"template_pid"`
	// Lanes are the lanes of live workers by state, with lanes > 1 (§2.5; lanes.go).
	Lanes *struct {
		Free     int `json:"free"`
		Busy     int `json:"busy"`
		Draining int `json:"draining"`
	} `json:"lanes"`
}

func readyStatus(s *server) (readyBody, error) {
	var st readyBody
	resp, err := http.Get("http://" + s.addr + "/_/ready")
	if err != nil {
		return st, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return st, err
	}
	if err := json.Unmarshal(b, &st); err != nil {
		return st, fmt.Errorf("%s: /_/ready: %v: %q", s.name, err, b)
	}
	return st, nil
}

// waitAllWorkers waits until all n workers are idle; in fork mode, every one of them forked:
// a pool that fell back to exec (§2.6) would measure exec twice.
func waitAllWorkers(ctx context.Context, s *server, spawn string, n int) error {
	for {
		st, err := readyStatus(s)
		if err == nil && st.Idle == n {
			if spawn != SpawnFork || st.Started[SpawnFork] == n {
				return nil
			}
			return fmt.Errorf("%s: %d of %d workers were not forked (started: %v)\n%s", s.name, n-st.Started[SpawnFork], n, st.Started, s.log.String())
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: not all %d workers ready: %v (last: %+v, %v)\n%s", s.name, n, ctx.Err(), st, err, s.log.String())
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// timeCrashes thaws a pool of one worker, times crashes crashes one after another, and freezes
// it again.
func timeCrashes(c *config, p *ForkPool, crashes int) (CrashFigures, error) {
	cf := CrashFigures{Spawn: p.Spawn, Workers: p.Workers}
	if err := c.srv.thaw(); err != nil {
		return cf, err
	}
	defer c.srv.freeze()
	probe := httpCrashProbe(c.srv.url(), time.Minute)
	for i := 0; i < crashes; i++ {
		d, err := probe.crashToAnswering()
		if err != nil {
			return cf, fmt.Errorf("%s crash %d: %v\n%s", c.key, i+1, err, c.srv.log.String())
		}
		cf.Samples = append(cf.Samples, ms(d))
		// The next crash starts from a pool whose workers are all idle again.
		if err := waitAllWorkers(context.Background(), c.srv, p.Spawn, p.Workers); err != nil {
			return cf, err
		}
	}
	cf.Ms = spreadOf(cf.Samples)
	return cf, nil
}

// forkRatios is fork's requests/s over exec's, per repetition, at each worker count.
func forkRatios(f *ForkMode) []ForkRatio {
	var out []ForkRatio
	for _, p := range f.Pools {
		if p.Spawn != SpawnFork {
			continue
		}
		ex := f.Pool(SpawnExec, p.Workers)
		if ex == nil {
			continue
		}
		for _, w := range []Workload{Hello, Model} {
			for _, c := range []string{"c1", "c8"} {
				if s, ok := perRepetition(p.Figures[w][c], ex.Figures[w][c]); ok {
					out = append(out, ForkRatio{Workers: p.Workers, Workload: w, Concurrency: c, Ratio: s})
				}
			}
		}
	}
	return out
}

// The goals of issue 19.
const (
	forkPSSGoal        = 1.3  // fork with the most workers ≤ 1.3 × exec with one worker
	forkCrashGoalMs    = 20.0 // median crash to answering in fork mode
	forkThroughputGoal = 0.95 // fork within 5 % of exec
)

// forkTargets checks the scenario against issue 19's goals.
func forkTargets(f *ForkMode) []Target {
	var out []Target
	most := 0
	for _, p := range f.Pools {
		most = max(most, p.Workers)
	}
	if fk, ex := f.Pool(SpawnFork, most), f.Pool(SpawnExec, 1); fk != nil && ex != nil && fk.Memory != nil && ex.Memory != nil {
		v := fk.Memory.PSSMiB / ex.Memory.PSSMiB
		out = append(out, Target{Name: fmt.Sprintf("tree PSS, fork workers=%d ÷ exec workers=1", most), Value: v, Min: v, Max: v,
			Goal: fmt.Sprintf("<= %g", forkPSSGoal), Met: v <= forkPSSGoal})
	}
	for _, c := range f.Crash {
		if c.Spawn == SpawnFork {
			out = append(out, Target{Name: "fork: median crash to answering, ms", Value: c.Ms.Median, Min: c.Ms.Min, Max: c.Ms.Max,
				Goal: fmt.Sprintf("<= %g", forkCrashGoalMs), Met: c.Ms.Median <= forkCrashGoalMs})
		}
	}
	for _, r := range f.Ratios {
		out = append(out, Target{Name: fmt.Sprintf("%s c=%s req/s, workers=%d: fork ÷ exec", r.Workload, r.Concurrency[1:], r.Workers),
			Value: r.Ratio.Median, Min: r.Ratio.Min, Max: r.Ratio.Max,
			Goal: fmt.Sprintf(">= %g", forkThroughputGoal), Met: r.Ratio.Median >= forkThroughputGoal})
	}
	return out
}
