package harness

import (
	"debug/buildinfo"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
)

// Peers (issue 30, bench/README.md "Peers"): the HTTP servers a team would run instead of
// AfterBurn, each measured behind the same proxy as of-watchdog's http mode (cmd/http-proxy)
// and alone (a platform routing straight to the function), pinned and installed by
// `make bench-build`. AfterBurn's headline ratio in each language is against the strongest
// of them behind the proxy; the standard library's servers that nobody deploys (Python's
// http.server, the JDK's HttpServer) stay a column and are never the headline.

// Peer is one server a language's users would run instead of AfterBurn.
type Peer struct {
	// Key names its configurations: <lang>/proxy/<key> and <lang>/alone/<key>.
	Key string
	// Server listens on 127.0.0.1:$PORT; $WORKERS is the watchdog's worker count. Unset for
	// the Own peer, which is Language.Server. It answers
	// as every benchmark program does: an empty body gets the greeting, any other is echoed.
	Server []string
	// Version prints the peer's name and version on one line, read from what is installed
	// (nil: VersionOf is used instead).
	Version []string
	// VersionOf is a Go binary: the peer is named "net/http (goX.Y.Z)" from its build
	// information.
	VersionOf string
	// Setup says how it serves: processes, threads, worker class, event loop.
	Setup string
	// Stdlib marks a standard-library server that nobody deploys (RESEARCH.md §8): it is
	// measured behind the proxy, as the "proxy" column, and never the headline.
	Stdlib bool
	// Own marks the peer that is Language.Server: its proxy figures are the "proxy" column's
	// (one configuration, <lang>/proxy, measures both).
	Own bool
	// AloneKey names a configuration that already measures this server alone ("ceiling":
	// Go's net/http); empty starts <lang>/alone/<key>. Stdlib peers are not measured alone.
	AloneKey string
}

// Variant is one more AfterBurn configuration of a language, beside its plain handler: the
// same watchdog with another worker (Python's ASGI adapter serving the app uvicorn serves).
type Variant struct {
	// Key names the configuration <lang>/afterburn-<key>.
	Key string
	// Worker is the command the watchdog starts; Env is added to the watchdog's environment,
	// which its workers inherit.
	Worker []string
	Env    []string
	// Setup is the worker as a user would write it; Label names it in the goals' table.
	Setup string
	Label string
	// SameAppAs names the peer that serves the very same application object.
	SameAppAs string
	// Headline: judged against the strongest peer as the plain handler is (issue 30), to at
	// least Goal (PeerGoal when zero).
	Headline bool
	Goal     float64
	// CPUGoal, when set, is the most CPU µs per request above the C child at c=8 hello (issue
	// 30: Python's ASGI adapter 40).
	CPUGoal float64
}

// PeerResults are one peer's figures, named with its version.
type PeerResults struct {
	Key    string     `json:"key"`
	Name   string     `json:"name"` // with its version, as installed
	Setup  string     `json:"setup"`
	Stdlib bool       `json:"stdlib"`
	Own    bool       `json:"own,omitempty"`   // the language's own server: the "proxy" column's
	Proxy  ByWorkload `json:"proxy"`           // behind cmd/http-proxy
	Alone  ByWorkload `json:"alone,omitempty"` // the client straight to it
}

// VariantResults are one AfterBurn variant's figures.
type VariantResults struct {
	Key       string     `json:"key"`
	Setup     string     `json:"setup"`
	Label     string     `json:"label,omitempty"`
	SameAppAs string     `json:"same_app_as,omitempty"`
	Headline  bool       `json:"headline"`
	Goal      float64    `json:"goal,omitempty"`
	CPUGoal   float64    `json:"cpu_goal_us,omitempty"`
	Figures   ByWorkload `json:"figures"`
}

// PeerRatio is an AfterBurn configuration's requests/s over a peer's, per repetition.
type PeerRatio struct {
	Of          string   `json:"of"`   // "afterburn" or "afterburn-<variant>"
	Peer        string   `json:"peer"` // its key
	Via         string   `json:"via"`  // "proxy" or "alone"
	Workload    Workload `json:"workload"`
	Concurrency string   `json:"concurrency"`
	Ratio       Spread   `json:"ratio"`
}

// Headline is the report's headline ratio: an AfterBurn configuration against the strongest
// peer behind the proxy for that workload and concurrency.
type Headline struct {
	Of          string   `json:"of"`
	Workload    Workload `json:"workload"`
	Concurrency string   `json:"concurrency"`
	Peer        string   `json:"peer"`
	PeerName    string   `json:"peer_name"`
	PeerRPS     Spread   `json:"peer_rps"`
	Ratio       Spread   `json:"ratio"`
	Goal        float64  `json:"goal"`
}

// OfAfterBurn is the plain AfterBurn configuration's name in ratios and headlines.
const OfAfterBurn = "afterburn"

// StrongestPeer is the headline's peer: of the peers that are not a standard-library
// server nobody deploys, the one with the highest median requests/s behind the proxy for
// this workload and concurrency (the first named on a tie); nil when none was measured.
func StrongestPeer(peers []*PeerResults, w Workload, c string) *PeerResults {
	var best *PeerResults
	for _, p := range peers {
		if p.Stdlib {
			continue
		}
		f := p.Proxy[w][c]
		if f == nil || len(f.Runs) == 0 {
			continue
		}
		if best == nil || f.RPS.Median > best.Proxy[w][c].RPS.Median {
			best = p
		}
	}
	return best
}

// perRep is a over b per repetition, as a spread; false when they did not run alike.
func perRep(a, b *Figures) (Spread, bool) {
	if a == nil || b == nil || len(a.Runs) == 0 || len(a.Runs) != len(b.Runs) {
		return Spread{}, false
	}
	var rs []float64
	for i := range a.Runs {
		rs = append(rs, a.Runs[i].RPS/b.Runs[i].RPS)
	}
	return spreadOf(rs), true
}

// afterburnConfigs are the AfterBurn configurations of a language a peer is compared with:
// the plain one, then each variant, in order.
func (l *LanguageResults) afterburnConfigs() []abConfig {
	out := []abConfig{{OfAfterBurn, l.AfterBurn, true, PeerGoal}}
	for _, v := range l.Variants {
		goal := v.Goal
		if goal == 0 {
			goal = PeerGoal
		}
		out = append(out, abConfig{OfAfterBurn + "-" + v.Key, v.Figures, v.Headline, goal})
	}
	return out
}

type abConfig struct {
	of       string
	figs     ByWorkload
	headline bool
	goal     float64 // of the headline ratio
}

// peerRatios is every AfterBurn configuration over every peer, behind the proxy and alone.
func peerRatios(l *LanguageResults) []PeerRatio {
	var out []PeerRatio
	for _, ab := range l.afterburnConfigs() {
		for _, p := range l.Peers {
			for _, via := range []struct {
				name string
				figs ByWorkload
			}{{"proxy", p.Proxy}, {"alone", p.Alone}} {
				for _, w := range []Workload{Hello, Echo1K} {
					for _, c := range []string{"c1", "c8"} {
						if s, ok := perRep(ab.figs[w][c], via.figs[w][c]); ok {
							out = append(out, PeerRatio{Of: ab.of, Peer: p.Key, Via: via.name, Workload: w, Concurrency: c, Ratio: s})
						}
					}
				}
			}
		}
	}
	return out
}

// headlines are the headline ratios: each AfterBurn configuration that is judged (the plain
// handler, and a variant marked Headline) over StrongestPeer, per workload and concurrency.
func headlines(l *LanguageResults) []Headline {
	var out []Headline
	for _, ab := range l.afterburnConfigs() {
		if !ab.headline {
			continue
		}
		for _, w := range []Workload{Hello, Echo1K} {
			for _, c := range []string{"c1", "c8"} {
				p := StrongestPeer(l.Peers, w, c)
				if p == nil {
					continue
				}
				if s, ok := perRep(ab.figs[w][c], p.Proxy[w][c]); ok {
					out = append(out, Headline{Of: ab.of, Workload: w, Concurrency: c, Peer: p.Key, PeerName: p.Name,
						PeerRPS: p.Proxy[w][c].RPS, Ratio: s, Goal: ab.goal})
				}
			}
		}
	}
	return out
}

// peerNames are the names of every language's peers with their versions, per language and
// key, read from what is installed.
func peerNames(root string, langs []Language) (map[string]map[string]string, error) {
	names := map[string]map[string]string{}
	for _, l := range langs {
		names[l.Name] = map[string]string{}
		for _, p := range l.Peers {
			name, err := peerName(root, p)
			if err != nil {
				return nil, err
			}
			names[l.Name][p.Key] = name
		}
	}
	return names, nil
}

// peerName runs a peer's Version command (or reads VersionOf's build information) from
// root: the name the report gives it. Setup goes beside it, not in it.
func peerName(root string, p Peer) (string, error) {
	if p.VersionOf != "" {
		bi, err := buildinfo.ReadFile(filepath.Join(root, p.VersionOf))
		if err != nil {
			return "", fmt.Errorf("peer %s: %v (run make bench-build)", p.Key, err)
		}
		return "net/http (" + bi.GoVersion + ")", nil
	}
	cmd := exec.Command(p.Version[0], p.Version[1:]...)
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		msg := ""
		if ee, ok := err.(*exec.ExitError); ok {
			msg = strings.TrimSpace(string(ee.Stderr))
		}
		return "", fmt.Errorf("peer %s: %s: %v %s (run make bench-build)", p.Key, strings.Join(p.Version, " "), err, msg)
	}
	name := strings.TrimSpace(string(out))
	if name == "" || strings.Contains(name, "\n") {
		return "", fmt.Errorf("peer %s: %s printed %q; want one line", p.Key, strings.Join(p.Version, " "), name)
	}
	return name, nil
}
