package report

import (
	"fmt"
	"io"
	"strings"

	"github.com/afterburn-dev/afterburn/bench/internal/harness"
)

// headline writes a language's headline (issue 30): each judged AfterBurn configuration over
// the strongest peer behind the proxy, named with its version, per workload and concurrency.
func headline(w io.Writer, l *harness.LanguageResults) {
	if len(l.Headline) == 0 {
		return
	}
	fmt.Fprintf(w, "**Headline: AfterBurn ÷ the strongest peer behind the proxy** (the peer with the most requests/s behind "+
		"`cmd/http-proxy` for that row, standard-library servers nobody deploys excluded; goal ≥ %g):\n\n", harness.PeerGoal)
	fmt.Fprintln(w, "| AfterBurn | workload | c | AfterBurn req/s | strongest peer behind the proxy | its req/s | **× strongest peer** |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|")
	for _, h := range l.Headline {
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | **%s** |\n", afterburnName(l, h.Of), h.Workload, strings.TrimPrefix(h.Concurrency, "c"),
			rps(afterburnFigures(l, h.Of)[h.Workload][h.Concurrency]), h.PeerName, spreadRPS(h.PeerRPS), times(h.Ratio, true))
	}
	fmt.Fprintln(w)
}

// peers writes a language's peers: who they are (with versions and set-up), then each one's
// requests/s behind the proxy and alone with AfterBurn's ratio to it, then AfterBurn's other
// configurations (Python's adapters) against the peer serving the same app.
func peers(w io.Writer, l *harness.LanguageResults) {
	if len(l.Peers) == 0 {
		return
	}
	fmt.Fprintln(w, "Peers: the servers a team would run instead, each behind the same proxy as of-watchdog's http mode "+
		"(`cmd/http-proxy`) and alone (the client straight to it).")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| peer | version | set-up |")
	fmt.Fprintln(w, "|---|---|---|")
	for _, p := range l.Peers {
		name := p.Key
		if p.Stdlib {
			name += " (standard library; never the headline)"
		}
		fmt.Fprintf(w, "| %s | %s | %s |\n", name, p.Name, p.Setup)
	}
	fmt.Fprintln(w)
	head := []string{"workload", "c", "AfterBurn req/s"}
	for _, p := range l.Peers {
		head = append(head, p.Key+" proxy req/s", "×")
		if p.Alone != nil {
			head = append(head, p.Key+" alone req/s", "×")
		}
	}
	row(w, head)
	row(w, dashes(len(head)))
	for _, wl := range []harness.Workload{harness.Hello, harness.Echo1K} {
		for _, c := range []string{"c1", "c8"} {
			ab := l.AfterBurn[wl][c]
			if ab == nil {
				continue
			}
			cells := []string{string(wl), strings.TrimPrefix(c, "c"), rps(ab)}
			for _, p := range l.Peers {
				cells = append(cells, rps(p.Proxy[wl][c]), peerRatio(l, harness.OfAfterBurn, p.Key, "proxy", wl, c))
				if p.Alone != nil {
					cells = append(cells, rps(p.Alone[wl][c]), peerRatio(l, harness.OfAfterBurn, p.Key, "alone", wl, c))
				}
			}
			row(w, cells)
		}
	}
	fmt.Fprintln(w)
	variants(w, l)
}

// variants writes AfterBurn's other configurations beside the peer serving the same app.
func variants(w io.Writer, l *harness.LanguageResults) {
	if len(l.Variants) == 0 {
		return
	}
	fmt.Fprintln(w, "AfterBurn's other configurations, each against the peer that serves the very same app object (– where none does):")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| AfterBurn | workload | c | req/s | p50/p99 µs | same-app peer | × it behind the proxy | × it alone |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|")
	for _, v := range l.Variants {
		of := harness.OfAfterBurn + "-" + v.Key
		for _, wl := range []harness.Workload{harness.Hello, harness.Echo1K} {
			for _, c := range []string{"c1", "c8"} {
				f := v.Figures[wl][c]
				if f == nil {
					continue
				}
				same := v.SameAppAs
				if same == "" {
					same = "–"
				}
				fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %s | %s |\n", afterburnName(l, of), wl, strings.TrimPrefix(c, "c"),
					rps(f), lat(f), same, peerRatio(l, of, v.SameAppAs, "proxy", wl, c), peerRatio(l, of, v.SameAppAs, "alone", wl, c))
			}
		}
	}
	fmt.Fprintln(w)
}

// proxyServer names the "proxy" column's server: the Own peer, with its version.
func proxyServer(l *harness.LanguageResults) string {
	for _, p := range l.Peers {
		if p.Own {
			return p.Name
		}
	}
	return "the language's own minimal server"
}

func afterburnName(l *harness.LanguageResults, of string) string {
	if of == harness.OfAfterBurn {
		return "plain handler"
	}
	for _, v := range l.Variants {
		if of == harness.OfAfterBurn+"-"+v.Key {
			return "`" + v.Setup + "`"
		}
	}
	return of
}

func afterburnFigures(l *harness.LanguageResults, of string) harness.ByWorkload {
	for _, v := range l.Variants {
		if of == harness.OfAfterBurn+"-"+v.Key {
			return v.Figures
		}
	}
	return l.AfterBurn
}

func peerRatio(l *harness.LanguageResults, of, peer, via string, wl harness.Workload, c string) string {
	for _, r := range l.PeerRatios {
		if r.Of == of && r.Peer == peer && r.Via == via && r.Workload == wl && r.Concurrency == c {
			return times(r.Ratio, true)
		}
	}
	return "–"
}

func spreadRPS(s harness.Spread) string {
	if s.N > 1 {
		return fmt.Sprintf("%.0f (%.0f–%.0f)", s.Median, s.Min, s.Max)
	}
	return fmt.Sprintf("%.0f", s.Median)
}

func row(w io.Writer, cells []string) { fmt.Fprintf(w, "| %s |\n", strings.Join(cells, " | ")) }

func dashes(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = "---"
	}
	return out
}
