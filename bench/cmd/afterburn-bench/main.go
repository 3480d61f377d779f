// Command afterburn-bench runs the AfterBurn benchmarks (make bench) and writes
// bench/results/<date>.json, bench/results/latest.json, a markdown table and a PNG chart; a run
// whose scenario failed or that was interrupted writes what completed as
// bench/results/<date>-partial.{json,md} and exits 1.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/afterburn-dev/afterburn/bench/internal/harness"
	"github.com/afterburn-dev/afterburn/bench/internal/report"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == harness.EchoClientCommand {
		os.Exit(harness.EchoClientMain(os.Args[2:]))
	}
	check := flag.Bool("check", false, "start every configuration of the languages once and check its answers (hello, echo1k) without timing anything, then exit")
	quick := flag.Bool("quick", false, "hello world only, one repetition, short runs (about five minutes)")
	langs := flag.String("langs", "go,python,node,java", "languages to measure, comma-separated")
	reps := flag.Int("reps", 3, "repetitions of every configuration")
	duration := flag.Duration("duration", 10*time.Second, "length of one measured run")
	warmup := flag.Duration("warmup", 3*time.Second, "unmeasured load on each configuration before the first repetition")
	workers := flag.Int("workers", runtime.NumCPU(), "watchdog workers")
	loadCPU := flag.String("load_cpu", "0", "taskset CPU list for wrk; empty for no pinning")
	serverCPU := flag.String("server_cpu", "1", "taskset CPU list for everything under test; empty for no pinning")
	large := flag.Int64("large_mib", 100, "MiB echoed in the large-body measurement; 0 skips it")
	out := flag.String("out", "bench/results", "directory for the results")
	scenarios := flag.String("scenarios", "languages,lanes,fork,isolation", "what to measure, comma-separated: languages (every language against its baselines), "+
		"lanes (an I/O-bound function in 1 worker × K lanes against K workers × 1 lane, and hello with -lanes 1), "+
		"fork (Python's fork mode against exec mode with a synthetic model), "+
		"isolation (Python with one fresh fork per request against a warm pool, fork+exec per request and the floors of a process per request), "+
		"front (every language's AfterBurn function and the C child behind the watchdog with its front and with -front off, issue 29; not run unless named); bench/README.md")
	lanesWarmup := flag.Duration("lanes_warmup", 0, "lanes scenario: unmeasured io load on each io pool before the first repetition; 0 for -warmup (Java: at least 10 s)")
	lanesK := flag.Int("lanes_k", harness.IssueLanes, "lanes scenario: lanes of the one-worker pool, workers of the one-lane pool, and wrk's connections")
	forkMiB := flag.Int("fork_model_mib", 512, "fork scenario: MiB of the synthetic model")
	forkWorkers := flag.String("fork_workers", "1,4,8", "fork scenario: worker counts, comma-separated")
	forkRequests := flag.Int("fork_requests", 10000, "fork scenario: model requests before the tree's PSS is read")
	forkCrashes := flag.Int("fork_crashes", 20, "fork scenario: crashes timed per spawn mode")
	isoWorkers := flag.Int("iso_workers", 4, "isolation scenario: the warm pool's workers and the request pool's spares")
	isoPaced := flag.Float64("iso_paced_rps", 50, "isolation scenario: the paced load's requests per second, below the rate spares are forked at")
	flag.Parse()
	set := map[string]bool{}
	flag.Visit(func(f *flag.Flag) { set[f.Name] = true })

	o := harness.Options{
		Root: ".", Watchdog: "go/bin/afterburn-watchdog",
		Langs:     strings.Split(*langs, ","),
		Workloads: []harness.Workload{harness.Hello, harness.Echo1K},
		Conns:     []int{1, 8},
		Reps:      *reps, Duration: *duration, Warmup: *warmup,
		ServerCPU: *serverCPU, LoadCPU: *loadCPU, Workers: *workers,
		ColdReps: 15, LargeBytes: *large << 20, Log: os.Stderr,
	}
	fork := &harness.ForkModeOptions{ModelMiB: *forkMiB, Requests: *forkRequests, Crashes: *forkCrashes}
	if *quick {
		o.Quick = true
		o.Workloads = []harness.Workload{harness.Hello}
		o.Reps, o.Duration, o.Warmup, o.ColdReps, o.LargeBytes = 1, 3*time.Second, time.Second, 5, 0
		// The fork scenario at a small scale; a flag given explicitly still wins.
		quickFork := harness.ForkModeOptions{ModelMiB: 64, Workers: []int{1, 2}, Requests: 1000, Crashes: 5}
		if !set["fork_model_mib"] {
			fork.ModelMiB = quickFork.ModelMiB
		}
		if !set["fork_workers"] {
			*forkWorkers = "1,2"
		}
		if !set["fork_requests"] {
			fork.Requests = quickFork.Requests
		}
		if !set["fork_crashes"] {
			fork.Crashes = quickFork.Crashes
		}
	}
	if *quick && !set["lanes_k"] {
		*lanesK = 8 // the lanes scenario at a small scale
	}
	if *lanesK < 2 {
		fatal(fmt.Errorf("-lanes_k must be at least 2"))
	}
	lanes := &harness.LanesOptions{Langs: o.Langs, K: *lanesK, Warmup: *lanesWarmup, Published: filepath.Join(*out, "latest.json")}
	for _, w := range strings.Split(*forkWorkers, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(w))
		if err != nil || n < 1 {
			fatal(fmt.Errorf("-fork_workers: bad worker count %q", w))
		}
		fork.Workers = append(fork.Workers, n)
	}
	if *isoWorkers < 1 || *isoPaced <= 0 {
		fatal(fmt.Errorf("-iso_workers must be at least 1 and -iso_paced_rps positive"))
	}
	if fork.ModelMiB < 1 || fork.Requests < 1 || fork.Crashes < 1 {
		fatal(fmt.Errorf("-fork_model_mib, -fork_requests and -fork_crashes must be at least 1"))
	}
	langsRun := false
	for _, sc := range strings.Split(*scenarios, ",") {
		switch sc {
		case "languages":
			langsRun = true
		case "lanes":
			o.Lanes = lanes
		case "fork":
			o.Fork = fork
		case "isolation":
			// The model of the fork scenario (-fork_model_mib; 64 MiB with -quick).
			o.Isolation = &harness.IsolationOptions{ModelMiB: fork.ModelMiB, Workers: *isoWorkers, PacedRPS: *isoPaced}
		case "front":
			o.Front = &harness.FrontOptions{Langs: o.Langs}
		default:
			fatal(fmt.Errorf("-scenarios: unknown scenario %q (languages, lanes, fork, isolation, front)", sc))
		}
	}
	if !langsRun {
		o.Langs = nil
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if *check {
		if len(o.Langs) == 0 {
			fatal(fmt.Errorf("-check checks the languages scenario's configurations: give -scenarios languages"))
		}
		if err := harness.Check(ctx, o, os.Stdout); err != nil {
			fatal(err)
		}
		return
	}
	res, runErr := harness.Run(ctx, o)
	// A second SIGINT or SIGTERM ends the program at once, even while a partial run is written.
	stop()
	if res == nil {
		fatal(runErr) // nothing completed: nothing to write
	}
	stamp := time.Now().UTC().Format("2006-01-02T150405Z")
	if o.Quick {
		stamp += "-quick"
	}
	if s := report.OnlyScenarios(res); s != "" {
		stamp += "-" + s // report.Publish: a run without the languages scenario is published as latest-<scenarios>.*
	}
	written, err := report.Publish(*out, stamp, res)
	if err != nil {
		fatal(err)
	}
	report.Markdown(os.Stdout, res)
	fmt.Printf("wrote %s\n", strings.Join(written, ", "))
	if res.Noisy() {
		fmt.Fprintf(os.Stderr, "afterburn-bench: noisy run (%d runs over the quiet-run guard's thresholds): not published as latest\n",
			len(res.Quiet.Noisy))
	}
	if runErr != nil {
		// Run returns results with an error only for a partial run (res.Failure): what
		// completed is written above as <stamp>-partial.*, and make bench still fails.
		fmt.Fprintf(os.Stderr, "afterburn-bench: %v\nafterburn-bench: partial run: only %s written, not published as latest\n",
			runErr, strings.Join(res.Failure.Completed, ", "))
		os.Exit(1)
	}
}

func fatal(err error) {
	fmt.Fprintf(os.Stderr, "afterburn-bench: %v\n", err)
	os.Exit(1)
}
