package harness

import (
	"context"
	"fmt"
	"io"
	"strings"
)

// Check starts every configuration a run of o would measure, one at a time, and checks its
// answers (verify: GET / gets the greeting, a 1 KiB POST is echoed) without timing anything:
// no wrk, no warm-up, no quiet-run guard. It names every peer with its version as installed.
// It reports each configuration as it goes, goes on past a failure and returns an error
// naming every configuration that failed (`afterburn-bench -check`, bench/README.md).
func Check(ctx context.Context, o Options, w io.Writer) error {
	langs, err := resolveLangs(o.Root, o.Langs)
	if err != nil {
		return err
	}
	names, err := peerNames(o.Root, langs)
	if err != nil {
		return err
	}
	configs, err := buildConfigs(o, langs)
	if err != nil {
		return err
	}
	for _, l := range langs {
		for _, p := range l.Peers {
			kind := "peer"
			if p.Stdlib {
				kind = "stdlib, never the headline"
			}
			fmt.Fprintf(w, "peer %s/%s: %s (%s); %s\n", l.Name, p.Key, names[l.Name][p.Key], kind, p.Setup)
		}
	}
	var failed []string
	for _, c := range configs {
		if err := ctx.Err(); err != nil {
			return err
		}
		err := c.start(ctx, o.Root, o.ServerCPU)
		if c.srv != nil {
			c.srv.stop()
		}
		if err != nil {
			failed = append(failed, c.key)
			fmt.Fprintf(w, "FAIL %-26s %v\n", c.key, err)
			continue
		}
		fmt.Fprintf(w, "ok   %-26s hello and echo1k answered correctly\n", c.key)
	}
	if len(failed) > 0 {
		return fmt.Errorf("%d of %d configurations failed the check: %s", len(failed), len(configs), strings.Join(failed, ", "))
	}
	fmt.Fprintf(w, "all %d configurations answered correctly\n", len(configs))
	return nil
}
