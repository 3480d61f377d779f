// Command afterburn-soak drives a long mixed load with faults by design through the watchdog
// and one language's fixture and checks request isolation and flat resources (make soak).
// The last line is "soak: N requests, M misdelivered, rss A->B MiB, fds X->Y, restarts R";
// the exit status is 1 when a response reached the wrong request, a response was otherwise
// wrong, or the watchdog's memory or descriptors did not stay flat.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"syscall"
	"time"

	"github.com/afterburn-dev/afterburn/conformance/internal/soak"
)

func main() {
	var c soak.Config
	flag.StringVar(&c.Watchdog, "watchdog", "", "the watchdog binary (required)")
	flag.StringVar(&c.Function, "function", "", "the fixture command (required)")
	flag.IntVar(&c.Requests, "n", 100000, "requests to send")
	flag.IntVar(&c.Concurrency, "concurrency", 8, "requests in flight at once")
	flag.IntVar(&c.Workers, "workers", 2*runtime.NumCPU(), "watchdog workers")
	flag.Float64Var(&c.FaultRate, "fault_rate", 0.002, "share of requests that crash, time out, write garbage or throw, by design")
	flag.DurationVar(&c.ExecTimeout, "exec_timeout", time.Second, "the watchdog's exec_timeout (the timeout fault sleeps past it)")
	flag.StringVar(&c.Lanes, "lanes", "", "the watchdog's lanes setting (§2.5); empty for its default")
	flag.Float64Var(&c.RSSSlackMiB, "rss_slack_mib", 0, "RSS growth in MiB always allowed on top of 10% (for short runs)")
	flag.IntVar(&c.SlowClients, "slow_clients", 0, "clients trickling a body at 1 KB/s, and as many never reading a 50 MB response, beside the load after warm-up")
	seed := flag.Uint64("seed", 0, "random seed; 0 picks one from the clock")
	flag.Parse()
	if c.Watchdog == "" || c.Function == "" {
		fmt.Fprintln(os.Stderr, "usage: afterburn-soak -watchdog BIN -function CMD [-n N] [-concurrency C] [-workers W] [-fault_rate R] [-seed S]")
		os.Exit(2)
	}
	c.Seed = *seed
	if c.Seed == 0 {
		c.Seed = uint64(time.Now().UnixNano())
	}
	c.Log = os.Stderr
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	fmt.Fprintf(os.Stderr, "soak: %d requests, concurrency %d, %d workers, fault rate %g, seed %d, function %q\n",
		c.Requests, c.Concurrency, c.Workers, c.FaultRate, c.Seed, c.Function)
	rep, err := soak.Run(ctx, c)
	if err != nil {
		fmt.Fprintf(os.Stderr, "afterburn-soak: %v\n", err)
		os.Exit(2)
	}
	for _, p := range rep.Problems {
		fmt.Println("  problem:", p)
	}
	fmt.Printf("%d failed by design (answered as the spec says), %d timed out in the queue behind them (§5.2), %d requests lost to %d exits after a response (§9.3) and %d late writes (§4.6), %d unexpected, %.0f req/s over %s\n",
		rep.FailedByDesign, rep.TimedOut, rep.Collateral, rep.ExitsAfterResp, rep.LateWrites, rep.Unexpected, float64(rep.Requests)/rep.Elapsed.Seconds(), rep.Elapsed.Round(time.Millisecond))
	fmt.Printf("after warm-up: %.0f req/s", rep.MeasuredRate)
	if rep.SlowClients > 0 {
		fmt.Printf(" beside %d trickling and %d non-reading clients; %.0f workers replaced meanwhile", rep.SlowClients, rep.SlowClients, rep.SlowClientRestarts)
	}
	fmt.Println()
	fmt.Println(rep.Line())
	if err := rep.Err(); err != nil {
		if rep.GoroutineDump != "" {
			fmt.Fprintf(os.Stderr, "the watchdog's goroutines at the end (SIGQUIT):\n%s\n", rep.GoroutineDump)
		}
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
