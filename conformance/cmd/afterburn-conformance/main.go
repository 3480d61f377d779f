// Command afterburn-conformance checks an AfterBurn library (through its
// fixture) and a watchdog against spec/PROTOCOL.md. See conformance/README.md.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/afterburn-dev/afterburn/conformance/internal/suite"
)

func main() {
	var o suite.Options
	flag.StringVar(&o.Watchdog, "watchdog", "", "path of the watchdog binary (needed by the e2e layer)")
	flag.StringVar(&o.Function, "function", "", `the fixture command, run as /bin/sh -c "exec CMD ARGS..."`)
	watchdogFlags := flag.String("watchdog-flags", "", `flags for every watchdog the e2e layer starts, before each check's own (a mode: "-spawn fork")`)
	flag.StringVar(&o.Layer, "layer", "all", "wire, e2e or all")
	flag.StringVar(&o.Spec, "spec", "spec/PROTOCOL.md", "the protocol specification whose sections checks cite")
	flag.StringVar(&o.Vectors, "vectors", "conformance/vectors", "the folder of vector files")
	flag.StringVar(&o.Run, "run", "", "run only checks whose id matches this regular expression")
	flag.BoolVar(&o.JSON, "json", false, "write a JSON report instead of text lines")
	flag.BoolVar(&o.Verbose, "v", false, "also print details of passing checks")
	flag.DurationVar(&o.Timeout, "timeout", 10*time.Second, "time limit of one check")
	flag.IntVar(&o.Parallel, "parallel", 2, "wire vectors run at once, each in its own process")
	flag.IntVar(&o.Lanes, "lanes", 1, "wire layer: start the fixture with this many lanes and run each vector on a lane other than 1 (PROTOCOL.md §2.5; skipped for a library that does not list streams)")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: afterburn-conformance -watchdog PATH -function \"CMD ARGS...\" [flags]\n\nflags:\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	o.WatchdogFlags = strings.Fields(*watchdogFlags)
	if flag.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "afterburn-conformance: unexpected arguments %q\n", flag.Args())
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ok, err := suite.Run(ctx, o, os.Stdout)
	if err != nil {
		fmt.Fprintf(os.Stderr, "afterburn-conformance: %v\n", err)
		os.Exit(2)
	}
	if !ok {
		os.Exit(1)
	}
}
