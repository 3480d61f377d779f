package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/afterburn-dev/afterburn/go/internal/watchdog"
)

// healthcheckUsage follows the flag list in --help.
const healthcheckUsage = `
subcommand:
  afterburn-watchdog [flags] healthcheck [flags]
    	probe the watchdog running with these flags and this environment: GET
    	/_/health on its port (listen_host, or 127.0.0.1 when it binds every
    	interface), exit 0 when it answers 200, 1 otherwise, 2 on bad flags; for
    	a container HEALTHCHECK in images without an HTTP client. It is the
    	subcommand when it is the first argument that is not a flag or a flag's
    	value and no -- came before it: a worker command named healthcheck goes
    	after --.
`

// healthcheckArgs reports whether args ask for the healthcheck subcommand
// rather than for a watchdog, and returns the flags around it: those before
// it and those after it, in that order. The rule: healthcheck is the first
// argument that is neither a flag nor a flag's value, with no "--" before it
// (flag parsing, which stops there, decides). Args that do not parse are not
// a healthcheck; the watchdog's own parse then reports them.
func healthcheckArgs(args []string) ([]string, bool) {
	cfg, err := watchdog.ParseConfig(args, func(string) string { return "" }, io.Discard)
	if err != nil || len(cfg.Command) == 0 || cfg.Command[0] != "healthcheck" {
		return nil, false
	}
	at := len(args) - len(cfg.Command) // where the positional arguments begin
	if at > 0 && args[at-1] == "--" {
		return nil, false // "-- healthcheck": the worker command
	}
	return append(append([]string{}, args[:at]...), cfg.Command[1:]...), true
}

// healthcheckTimeout bounds one probe: a HEALTHCHECK that hangs is a failed one.
const healthcheckTimeout = 3 * time.Second

// healthcheck is `afterburn-watchdog healthcheck [flags]`: it asks the watchdog
// running in this container for its liveness path (PROTOCOL.md §9.2, §10.1)
// and reports by exit status, 0 when it answers 200. It reads the watchdog's
// own flags and environment (port, PORT, listen_host), so it probes the
// address the watchdog serves on, and it lets a Dockerfile HEALTHCHECK work in
// images with no HTTP client at all (FROM scratch, distroless, slim bases).
func healthcheck(args []string, getenv func(string) string, stderr io.Writer) int {
	// ParseConfig resolves the address exactly as the watchdog does; the
	// worker command is not needed here, so a placeholder satisfies it.
	cfg, err := watchdog.ParseConfig(append(args, "--", "healthcheck"), getenv, stderr)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprint(stderr, healthcheckUsage)
		return 0
	}
	if err != nil {
		fmt.Fprintln(stderr, "afterburn-watchdog healthcheck:", err)
		return 2
	}
	host := cfg.ListenHost
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
	}
	url := "http://" + net.JoinHostPort(host, strconv.Itoa(cfg.Port)) + "/_/health"
	// One probe, one connection: never reuse an idle one, which could belong
	// to a watchdog that has since gone away. No proxy from the environment:
	// the probe is for this container's own watchdog.
	client := &http.Client{
		Timeout:   healthcheckTimeout,
		Transport: &http.Transport{DisableKeepAlives: true, Proxy: nil},
	}
	resp, err := client.Get(url)
	if err != nil {
		fmt.Fprintln(stderr, "afterburn-watchdog healthcheck:", err)
		return 1
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		fmt.Fprintf(stderr, "afterburn-watchdog healthcheck: %s answered %s\n", url, resp.Status)
		return 1
	}
	return 0
}
