package report

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/afterburn-dev/afterburn/bench/internal/harness"
)

// withPeers adds Python's peers to the sample's language: the stdlib server as the proxy
// column, uvicorn and gunicorn behind the proxy and alone, the ASGI adapter, and the headline.
func withPeers() *harness.Results {
	r := sample()
	l := r.Languages["java"]
	r.Order, r.Languages = []string{"python"}, map[string]*harness.LanguageResults{"python": l}
	f := func(rps float64) *harness.Figures {
		return &harness.Figures{RPS: harness.Spread{Median: rps, Min: rps, Max: rps, N: 1},
			P50us: harness.Spread{Median: 100, N: 1}, P99us: harness.Spread{Median: 300, N: 1}}
	}
	by := func(c1, c8 float64) harness.ByWorkload {
		return harness.ByWorkload{harness.Hello: {"c1": f(c1), "c8": f(c8)}}
	}
	one := func(v float64) harness.Spread { return harness.Spread{Median: v, Min: v, Max: v, N: 1} }
	l.Peers = []*harness.PeerResults{
		{Key: "http.server", Name: "http.server; CPython 3.11.7", Setup: "ThreadingHTTPServer", Stdlib: true, Own: true, Proxy: l.Proxy},
		{Key: "uvicorn", Name: "uvicorn 0.54.0, httptools 0.9.0, uvloop 0.23.0; CPython 3.11.7", Setup: "one process",
			Proxy: by(5000, 7500), Alone: by(9000, 16000)},
		{Key: "gunicorn", Name: "gunicorn 27.0.1; CPython 3.11.7", Setup: "--worker-class sync --workers 2",
			Proxy: by(1500, 2000), Alone: by(2000, 2500)},
	}
	l.Variants = []*harness.VariantResults{{Key: "asgi", Setup: "python -m afterburn_runtime --asgi asgi_app:app",
		SameAppAs: "uvicorn", Headline: true, Figures: by(3000, 3500)}}
	l.PeerRatios = []harness.PeerRatio{
		{Of: "afterburn", Peer: "uvicorn", Via: "proxy", Workload: harness.Hello, Concurrency: "c1", Ratio: one(1.2)},
		{Of: "afterburn", Peer: "uvicorn", Via: "alone", Workload: harness.Hello, Concurrency: "c1", Ratio: one(0.667)},
		{Of: "afterburn-asgi", Peer: "uvicorn", Via: "proxy", Workload: harness.Hello, Concurrency: "c8", Ratio: one(0.467)},
	}
	l.Headline = []harness.Headline{
		{Of: "afterburn", Workload: harness.Hello, Concurrency: "c1", Peer: "uvicorn", PeerName: l.Peers[1].Name,
			PeerRPS: one(5000), Ratio: one(1.2)},
		{Of: "afterburn-asgi", Workload: harness.Hello, Concurrency: "c8", Peer: "uvicorn", PeerName: l.Peers[1].Name,
			PeerRPS: one(7500), Ratio: one(0.467)},
	}
	return r
}

// TestMarkdownHeadlineIsAgainstTheStrongestPeerWithItsVersion: the language opens with the
// headline naming the peer and its version, the proxy column names its server, and the peers
// table gives every peer's version, behind the proxy and alone, with the stdlib one marked.
func TestMarkdownHeadlineIsAgainstTheStrongestPeerWithItsVersion(t *testing.T) {
	var b bytes.Buffer
	Markdown(&b, withPeers())
	out := b.String()
	mustContain(t, out,
		"## python\n\n**Headline: AfterBurn ÷ the strongest peer behind the proxy**",
		"| plain handler | hello | 1 | 6000 | uvicorn 0.54.0, httptools 0.9.0, uvloop 0.23.0; CPython 3.11.7 | 5000 | **1.20×** |",
		"| `python -m afterburn_runtime --asgi asgi_app:app` | hello | 8 | 3500 | uvicorn 0.54.0, httptools 0.9.0, uvloop 0.23.0; CPython 3.11.7 | 7500 | **0.47×** |",
		"The proxy column: http.server; CPython 3.11.7 behind `cmd/http-proxy`.",
		"| http.server (standard library; never the headline) | http.server; CPython 3.11.7 | ThreadingHTTPServer |",
		"| gunicorn | gunicorn 27.0.1; CPython 3.11.7 | --worker-class sync --workers 2 |",
		"| workload | c | AfterBurn req/s | http.server proxy req/s | × | uvicorn proxy req/s | × | uvicorn alone req/s | × | gunicorn proxy req/s | × | gunicorn alone req/s | × |",
		"| hello | 1 | 6000 | 4000 | – | 5000 | 1.20× | 9000 | 0.67× | 1500 | – | 2000 | – |",
		"| `python -m afterburn_runtime --asgi asgi_app:app` | hello | 8 | 3500 | 100 / 300 | uvicorn | 0.47× | – |",
	)
}

// TestJSONNamesEveryPeerWithItsVersion: the JSON carries each peer's name with its version,
// the stdlib flag, and the headline with the peer it was taken against.
func TestJSONNamesEveryPeerWithItsVersion(t *testing.T) {
	p := filepath.Join(t.TempDir(), "r.json")
	if err := WriteJSON(p, withPeers()); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Languages map[string]struct {
			Peers []struct {
				Key, Name string
				Stdlib    bool
			}
			Headline []struct {
				Of       string `json:"of"`
				Peer     string `json:"peer"`
				PeerName string `json:"peer_name"`
			}
			Variants []struct {
				Key       string `json:"key"`
				SameAppAs string `json:"same_app_as"`
			} `json:"afterburn_variants"`
		}
	}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	py := got.Languages["python"]
	if len(py.Peers) != 3 || py.Peers[0].Name != "http.server; CPython 3.11.7" || !py.Peers[0].Stdlib ||
		py.Peers[1].Name != "uvicorn 0.54.0, httptools 0.9.0, uvloop 0.23.0; CPython 3.11.7" || py.Peers[1].Stdlib {
		t.Errorf("peers in the JSON = %+v; want each named with its version, the stdlib one marked", py.Peers)
	}
	if len(py.Headline) != 2 || py.Headline[1].Of != "afterburn-asgi" || py.Headline[1].Peer != "uvicorn" ||
		py.Headline[1].PeerName == "" {
		t.Errorf("headline in the JSON = %+v", py.Headline)
	}
	if len(py.Variants) != 1 || py.Variants[0].SameAppAs != "uvicorn" {
		t.Errorf("variants in the JSON = %+v", py.Variants)
	}
}
