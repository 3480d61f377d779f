package harness

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"
)

// Lanes (issue 20, PROTOCOL.md §2.5): an I/O-bound function (functions/<lang>/io*: GET /io
// waits 50 ms without holding its lane's runtime, then answers 1 KiB) at c=K in one worker of
// K lanes against K workers of one lane: requests/s, p50/p99 and the RSS and PSS of each
// watchdog's whole process tree; and the language's hello function with -lanes 1 at c=8, to be
// compared with the figure published before lanes existed.

// IO is the lanes scenario's workload: GET /io.
const IO Workload = "io"

// ioBody is what GET /io answers, the 1 KiB of the echo workload.
var ioBody = strings.Repeat("abcdefghijklmnop", 64)

// ioWait is how long the I/O-bound handler waits.
const ioWait = 50 * time.Millisecond

// helloConns is the concurrency of the lanes=1 hello run, the published table's c=8.
const helloConns = 8

// LanesOptions configure the lanes scenario; nil in Options skips it.
type LanesOptions struct {
	Langs []string
	// K is the lanes of the one-worker pool, the workers of the one-lane pool and wrk's
	// connections.
	K int
	// Warmup, when set, is the unmeasured io load on each io pool before the first repetition,
	// in place of the languages' warm-up: K JVMs on one CPU each compile the same code, and
	// take longer than one to reach their steady state.
	Warmup time.Duration
	// Published is a whole run's JSON (bench/results/latest.json), read before the run, whose
	// AfterBurn hello c=8 the lanes=1 figure is set beside; "" or missing for none.
	Published string
}

// LanePool is one watchdog of the scenario.
type LanePool struct {
	Key     string      `json:"key"`
	Workers int         `json:"workers"`
	Lanes   int         `json:"lanes"`
	Memory  *PoolMemory `json:"memory,omitempty"`
	Figures ByWorkload  `json:"figures"`
}

// PoolMemory is a pool's tree memory, read with the pool alone: the sample with the most RSS
// of a few taken while K connections load it, and one taken right after the load.
type PoolMemory struct {
	During *TreeMemory `json:"during_load"`
	After  *TreeMemory `json:"after_load"`
}

// PublishedHello is a published run's AfterBurn hello c=8 (no -lanes: one lane).
type PublishedHello struct {
	Date string `json:"date"`
	File string `json:"file"`
	RPS  Spread `json:"rps"`
	P99  Spread `json:"p99_us"`
}

// LanesLanguage is one language's results.
type LanesLanguage struct {
	Lanes   *LanePool `json:"one_worker_k_lanes"`
	Workers *LanePool `json:"k_workers_one_lane"`
	Hello   *LanePool `json:"hello_lanes_1"`
	// RPSRatio is the lanes pool's requests/s over the workers pool's, per repetition.
	RPSRatio Spread `json:"rps_lanes_over_workers"`
	// RSSRatio and PSSRatio are the lanes pool's tree memory during the load over the
	// workers pool's; 0 when not read.
	RSSRatio float64 `json:"rss_lanes_over_workers"`
	PSSRatio float64 `json:"pss_lanes_over_workers"`
	// Published is the published hello c=8 of this language, when there is one.
	Published *PublishedHello `json:"published_hello_c8,omitempty"`
	Targets   []Target        `json:"targets"`
	// Skipped says why the language was not measured: its library serves fewer lanes than
	// asked (PROTOCOL.md §2.5), so there is nothing to compare. Empty when it was.
	Skipped string `json:"skipped,omitempty"`
}

// errFewerLanes is a library that serves fewer lanes than the pool asks for.
var errFewerLanes = errors.New("the library serves fewer lanes than asked")

// Lanes is the scenario's results.
type Lanes struct {
	K         int                       `json:"k"`
	WaitMs    float64                   `json:"io_wait_ms"`
	IOWarmup  string                    `json:"io_pools_warmup,omitempty"` // -lanes_warmup; empty: the languages' own
	Order     []string                  `json:"languages_order"`
	Languages map[string]*LanesLanguage `json:"languages"`
}

// IssueLanes is the K that issue 20's goals are stated for.
const IssueLanes = 32

// The goals of issue 20.
const (
	lanesThroughputGoal = 0.9   // 1 × K lanes ≥ 0.9 × the req/s of K × 1
	lanesRSSGoal        = 0.125 // 1 × K lanes ≤ 1/8 of the tree RSS of K × 1
)

// lanesRSSGoalLangs are the languages with a memory goal (Go's is throughput only).
var lanesRSSGoalLangs = map[string]bool{"java": true, "node": true, "python": true}

// lanesTargets checks one language against issue 20's goals.
func lanesTargets(lang string, k int, ll *LanesLanguage) []Target {
	var out []Target
	if ll.RPSRatio.N > 0 {
		out = append(out, Target{Name: fmt.Sprintf("io c=%d req/s: 1 worker × %d lanes ÷ %d workers × 1 lane", k, k, k),
			Value: ll.RPSRatio.Median, Min: ll.RPSRatio.Min, Max: ll.RPSRatio.Max,
			Goal: fmt.Sprintf(">= %g", lanesThroughputGoal), Met: ll.RPSRatio.Median >= lanesThroughputGoal})
	}
	if lanesRSSGoalLangs[lang] && ll.RSSRatio > 0 {
		out = append(out, Target{Name: fmt.Sprintf("tree RSS during io load: 1 worker × %d lanes ÷ %d workers × 1 lane", k, k),
			Value: ll.RSSRatio, Min: ll.RSSRatio, Max: ll.RSSRatio,
			Goal: fmt.Sprintf("<= %g", lanesRSSGoal), Met: ll.RSSRatio <= lanesRSSGoal})
	}
	return out
}

// lanesRatios fills in the ratios of the lanes pool to the workers pool.
func lanesRatios(ll *LanesLanguage, k int) {
	if s, ok := perRepetition(ll.Lanes.Figures[IO][conc(k)], ll.Workers.Figures[IO][conc(k)]); ok {
		ll.RPSRatio = s
	}
	if a, b := ll.Lanes.Memory, ll.Workers.Memory; a != nil && b != nil && a.During != nil && b.During != nil {
		ll.RSSRatio = a.During.RSSMiB / b.During.RSSMiB
		ll.PSSRatio = a.During.PSSMiB / b.During.PSSMiB
	}
}

// mostRSS is the sample with the most RSS.
func mostRSS(samples []*TreeMemory) *TreeMemory {
	var m *TreeMemory
	for _, s := range samples {
		if s != nil && (m == nil || s.RSSMiB > m.RSSMiB) {
			m = s
		}
	}
	return m
}

// readPublished reads a whole run's AfterBurn hello c=8 per language from path.
func readPublished(path string) (map[string]*PublishedHello, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var run struct {
		Date      string `json:"date"`
		Languages map[string]struct {
			AfterBurn ByWorkload `json:"afterburn"`
		} `json:"languages"`
	}
	if err := json.Unmarshal(b, &run); err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	out := map[string]*PublishedHello{}
	for name, l := range run.Languages {
		if f := l.AfterBurn[Hello]["c8"]; f != nil {
			out[name] = &PublishedHello{Date: run.Date, File: path, RPS: f.RPS, P99: f.P99us}
		}
	}
	return out, nil
}

// measureLanes runs the scenario, one language after another: the memory of each io pool
// alone, then the io pools and the hello pool side by side, interleaved in every repetition.
func measureLanes(ctx context.Context, o Options, load Load, guard *quietGuard) (*Lanes, error) {
	lo := o.Lanes
	langs, err := resolveLangs(o.Root, lo.Langs)
	if err != nil {
		return nil, err
	}
	published := map[string]*PublishedHello{}
	if lo.Published != "" {
		if published, err = readPublished(lo.Published); err != nil {
			fmt.Fprintf(o.Log, "lanes: no published hello c=8 to compare with: %v\n", err)
			published = map[string]*PublishedHello{}
		}
	}
	res := &Lanes{K: lo.K, WaitMs: float64(ioWait.Milliseconds()), Languages: map[string]*LanesLanguage{}}
	if lo.Warmup > 0 {
		res.IOWarmup = lo.Warmup.String()
	}
	for _, l := range langs {
		ll, err := measureLanesLanguage(ctx, o, load, guard, l)
		if errors.Is(err, errFewerLanes) {
			// Not a failure of the run: that library has no lanes yet, and the other
			// languages (and the scenarios after this one) are still worth their time.
			fmt.Fprintf(o.Log, "lanes: %s not measured: %v\n", l.Name, err)
			res.Order = append(res.Order, l.Name)
			res.Languages[l.Name] = &LanesLanguage{Skipped: firstLine(err.Error())}
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %v", l.Name, err)
		}
		ll.Published = published[l.Name]
		lanesRatios(ll, lo.K)
		ll.Targets = lanesTargets(l.Name, lo.K, ll)
		res.Order = append(res.Order, l.Name)
		res.Languages[l.Name] = ll
	}
	return res, nil
}

func measureLanesLanguage(ctx context.Context, o Options, load Load, guard *quietGuard, l Language) (*LanesLanguage, error) {
	k := o.Lanes.K
	ll := &LanesLanguage{
		Lanes:   &LanePool{Key: fmt.Sprintf("%s/io-w1-l%d", l.Name, k), Workers: 1, Lanes: k, Figures: newByWorkload()},
		Workers: &LanePool{Key: fmt.Sprintf("%s/io-w%d-l1", l.Name, k), Workers: k, Lanes: 1, Figures: newByWorkload()},
		Hello:   &LanePool{Key: fmt.Sprintf("%s/hello-w%d-l1", l.Name, o.Workers), Workers: o.Workers, Lanes: 1, Figures: newByWorkload()},
	}
	for _, p := range []*LanePool{ll.Lanes, ll.Workers} {
		var err error
		if p.Memory, err = poolMemory(ctx, o, load, l, p); err != nil {
			return nil, err
		}
	}
	type run struct {
		p     *LanePool
		w     Workload
		conns int
		c     *config
	}
	runs := []*run{{p: ll.Lanes, w: IO, conns: k}, {p: ll.Workers, w: IO, conns: k}, {p: ll.Hello, w: Hello, conns: helloConns}}
	var configs []*config
	defer func() { stopAll(configs) }()
	for _, r := range runs {
		argv := l.IO
		if r.p == ll.Hello {
			argv = l.AfterBurn
		}
		c, err := startLanePool(ctx, o, r.p, r.w, argv)
		if c != nil {
			configs = append(configs, c)
		}
		if err != nil {
			return nil, err
		}
		r.c = c
		warmup := o.Warmup
		if !o.Quick {
			warmup = max(warmup, l.Warmup)
		}
		if r.w == IO && o.Lanes.Warmup > 0 {
			warmup = o.Lanes.Warmup
		}
		fmt.Fprintf(o.Log, "started %s on %s; warming up\n", c.key, c.srv.addr)
		if _, err := load.Run(c.srv.url(), r.w, r.conns, warmup); err != nil && err != errNoRequests {
			return nil, fmt.Errorf("%s warm-up: %v", c.key, err)
		}
		if err := c.srv.freeze(); err != nil {
			return nil, err
		}
	}
	for rep := 1; rep <= o.Reps; rep++ {
		for _, r := range runs {
			res, err := guard.measure(r.c.srv, r.c.key, r.w, conc(r.conns), rep, func() (LoadResult, error) {
				return r.c.srv.measure(load, r.w, r.conns, o.Duration)
			})
			if err != nil {
				return nil, fmt.Errorf("%s: %v", r.c.key, err)
			}
			r.p.Figures.figures(r.w, conc(r.conns)).add(res)
			fmt.Fprintf(o.Log, "rep %d/%d %-7s c=%d %-20s %9.0f req/s  p50 %7.0f µs  p99 %7.0f µs  errors %d  %s\n",
				rep, o.Reps, r.w, r.conns, r.c.key, res.RPS, res.P50us, res.P99us, res.Errors, res.Guard.Brief())
		}
	}
	return ll, nil
}

// startLanePool starts the watchdog of p in front of argv, waits until every worker is idle
// with every lane it was asked for, and checks its answers to w. The config it returns, if
// any, must be stopped, also after an error.
func startLanePool(ctx context.Context, o Options, p *LanePool, w Workload, argv []string) (*config, error) {
	c := &config{key: p.Key, program: "afterburn-watchdog", pool: true,
		argv: append([]string{o.Watchdog, "-port", "0", "-metrics_port", "0", "-listen_host", "127.0.0.1",
			"-workers", fmt.Sprint(p.Workers), "-lanes", fmt.Sprint(p.Lanes), "--"}, argv...),
	}
	startCtx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	var err error
	if c.srv, err = startServer(startCtx, c.key, c.program, o.Root, o.ServerCPU, c.argv, c.env); err != nil {
		return nil, err
	}
	if err := waitLanes(startCtx, c.srv, p.Workers, p.Lanes); err != nil {
		return c, err
	}
	check := verify
	if w == IO {
		check = verifyIO
	}
	if err := check(c.srv); err != nil {
		return c, fmt.Errorf("%s answers wrongly: %v\n%s", c.key, err, c.srv.log.String())
	}
	return c, nil
}

// waitLanes waits until all n workers are idle and, with lanes > 1, serve every lane: a
// library that states fewer lanes (PROTOCOL.md §2.5) would measure something else.
func waitLanes(ctx context.Context, s *server, n, lanes int) error {
	for {
		st, err := readyStatus(s)
		if err == nil && st.Idle == n {
			if lanes == 1 {
				return nil
			}
			if st.Lanes == nil || st.Lanes.Free != n*lanes {
				free := 0
				if st.Lanes != nil {
					free = st.Lanes.Free
				}
				return fmt.Errorf("%w: %s: %d worker(s) idle with %d free lanes; want %d (does the library list streams and state at least %d in AfterBurn-Streams?)\n%s",
					errFewerLanes, s.name, n, free, n*lanes, lanes, s.log.String())
			}
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: not all %d workers ready: %v (last: %+v, %v)\n%s", s.name, n, ctx.Err(), st, err, s.log.String())
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// verifyIO checks GET /io: 1 KiB, and not sooner than the handler's wait.
func verifyIO(s *server) error {
	start := time.Now()
	resp, err := http.Get(s.url() + "io")
	if err != nil {
		return err
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	took := time.Since(start)
	if resp.StatusCode != 200 || string(got) != ioBody {
		return fmt.Errorf("GET /io = %d, %d bytes %.40q; want 200 and 1 KiB of the echo pattern", resp.StatusCode, len(got), got)
	}
	if took < ioWait {
		return fmt.Errorf("GET /io answered in %v; want at least the handler's wait, %v", took, ioWait)
	}
	return nil
}

// poolMemory starts p alone (another pool of the language would share its binary's and
// runtime's pages and lower both PSS figures), loads it with K connections of io for
// o.Duration, reads its tree's memory at a quarter, half and three quarters of the load and
// right after it, and stops it.
func poolMemory(ctx context.Context, o Options, load Load, l Language, p *LanePool) (*PoolMemory, error) {
	c, err := startLanePool(ctx, o, p, IO, l.IO)
	if c != nil {
		defer stopAll([]*config{c})
	}
	if err != nil {
		return nil, err
	}
	root := c.srv.cmd.Process.Pid
	role := func(pid int) string {
		if pid == root {
			return "watchdog"
		}
		return "worker"
	}
	type loaded struct {
		r   LoadResult
		err error
	}
	done := make(chan loaded, 1)
	go func() {
		r, err := load.Run(c.srv.url(), IO, o.Lanes.K, o.Duration)
		done <- loaded{r, err}
	}()
	var during []*TreeMemory
	for i := 1; i <= 3; i++ {
		select {
		case <-time.After(o.Duration / 4):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		m, err := treeMemory(root, role)
		if err != nil {
			return nil, fmt.Errorf("%s: %v", c.key, err)
		}
		during = append(during, m)
	}
	ld := <-done
	if ld.err != nil {
		return nil, fmt.Errorf("%s: memory load: %v", c.key, ld.err)
	}
	after, err := treeMemory(root, role)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", c.key, err)
	}
	m := &PoolMemory{During: mostRSS(during), After: after}
	fmt.Fprintf(o.Log, "%s alone: tree RSS %.1f MiB, PSS %.1f MiB during %d-connection io load (%.0f req/s); after: RSS %.1f, PSS %.1f MiB\n",
		c.key, m.During.RSSMiB, m.During.PSSMiB, o.Lanes.K, ld.r.RPS, after.RSSMiB, after.PSSMiB)
	return m, nil
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
