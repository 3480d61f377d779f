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
