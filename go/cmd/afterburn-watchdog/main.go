// Command afterburn-watchdog is the AfterBurn/1 watchdog: it serves HTTP and
// carries each request to one of a pool of long-lived worker processes.
//
//	afterburn-watchdog [flags] -- CMD ARGS...
//	afterburn-watchdog [flags] healthcheck [flags]
//
// The second form probes the watchdog already running with the same flags and
// environment (its /_/health path) and exits 0 when it is alive: a container
// HEALTHCHECK for images without an HTTP client. healthcheck is the
// subcommand when it is the first argument that is neither a flag nor a
// flag's value and no "--" came before it; a worker command named healthcheck
// goes after "--".
//
// Every flag is also an environment variable of the same name; a flag wins.
// Run with --help for the list. This file parses flags and signals only;
// the watchdog is github.com/afterburn-dev/afterburn/go/internal/watchdog.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/afterburn-dev/afterburn/go/internal/watchdog"
)

func main() {
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	if flags, ok := healthcheckArgs(args); ok {
		return healthcheck(flags, os.Getenv, os.Stderr)
	}
	var usage bytes.Buffer // the flag package's own words, for text only
	cfg, err := watchdog.ParseConfig(args, os.Getenv, &usage)
	if errors.Is(err, flag.ErrHelp) {
		os.Stderr.Write(usage.Bytes())
		fmt.Fprint(os.Stderr, healthcheckUsage)
		return 0
	}
	if err != nil {
		cfg.LogFormat = watchdog.RequestedLogFormat(args, os.Getenv)
		if cfg.LogFormat == watchdog.LogText {
			os.Stderr.Write(usage.Bytes())
		}
		logError(&cfg, err)
		return 2
	}
	wd, err := watchdog.New(cfg)
	if err != nil {
		logError(&cfg, err)
		return 2
	}
	// PROTOCOL.md §9.4: SIGTERM or SIGINT starts a graceful shutdown.
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if err := wd.Run(ctx); err != nil {
		logError(&cfg, err)
		return 1
	}
	return 0
}

// logError writes why the watchdog could not start or serve, as a JSON line
// when log_format is json (PROTOCOL.md §9.5): every line it writes is one then,
// also when another setting does not parse (RequestedLogFormat).
func logError(cfg *watchdog.Config, err error) {
	if cfg.LogFormat != watchdog.LogJSON {
		fmt.Fprintln(os.Stderr, err)
		return
	}
	line, _ := json.Marshal(struct {
		Time  string `json:"time"`
		Level string `json:"level"`
		Msg   string `json:"msg"`
	}{time.Now().UTC().Format("2006-01-02T15:04:05.000Z07:00"), "error", err.Error()})
	fmt.Fprintf(os.Stderr, "%s\n", line)
}
