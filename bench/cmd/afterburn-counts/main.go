// Command afterburn-counts counts, per request, what noise on the machine does not move
// (make bench-counts): user-space instructions (callgrind), system calls and context switches
// of the relay, the watchdog in front of the C child (its front on, and with -front off:
// net/http only) and the bare Go server, and judges the watchdog's goals (issues 29 and 18).
// It writes bench/results/<date>-counts.json, bench/results/latest-counts.json and
// latest-counts.md.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"syscall"
	"time"

	"github.com/afterburn-dev/afterburn/bench/internal/harness"
	"github.com/afterburn-dev/afterburn/bench/internal/report"
)

func main() {
	requests := flag.Int("requests", 2000, "requests counted under callgrind, per workload and concurrency")
	native := flag.Int("native_requests", 20000, "requests counted natively (/proc, system calls), per workload and concurrency")
	warmup := flag.Int("warmup", 300, "uncounted requests first, per workload and concurrency")
	workers := flag.Int("workers", runtime.NumCPU(), "watchdog workers")
	loadCPU := flag.String("load_cpu", "0", "CPU list for this program, whose client sends the requests; empty for no pinning")
	serverCPU := flag.String("server_cpu", "1", "taskset CPU list for everything under test; empty for no pinning")
	out := flag.String("out", "bench/results", "directory for the results")
	flag.Parse()
	if err := harness.PinSelf(*loadCPU); err != nil {
		fatal(err)
	}

	o := harness.CountsOptions{
		Root: ".", Watchdog: "go/bin/afterburn-watchdog",
		Requests: *requests, NativeRequests: *native, Warmup: *warmup,
		Workloads: []harness.Workload{harness.Hello, harness.Echo1K},
		Conns:     []int{1, 8},
		Workers:   *workers, LoadCPU: *loadCPU, ServerCPU: *serverCPU, Log: os.Stderr,
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	res, err := harness.RunCounts(ctx, o)
	if err != nil {
		fatal(err)
	}
	stamp := time.Now().UTC().Format("2006-01-02T150405Z")
	for _, p := range []string{filepath.Join(*out, stamp+"-counts.json"), filepath.Join(*out, "latest-counts.json")} {
		if err := report.WriteJSON(p, res); err != nil {
			fatal(err)
		}
	}
	md, err := os.Create(filepath.Join(*out, "latest-counts.md"))
	if err != nil {
		fatal(err)
	}
	report.CountsMarkdown(md, res)
	if err := md.Close(); err != nil {
		fatal(err)
	}
	report.CountsMarkdown(os.Stdout, res)
	fmt.Printf("wrote %s/{%s-counts.json,latest-counts.json,latest-counts.md}\n", *out, stamp)
}

func fatal(err error) {
	fmt.Fprintf(os.Stderr, "afterburn-counts: %v\n", err)
	os.Exit(1)
}
