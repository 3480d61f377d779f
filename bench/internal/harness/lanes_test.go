package harness

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func lanePool(key string, workers, lanes int, rssMiB, pssMiB float64, rps ...float64) *LanePool {
	p := &LanePool{Key: key, Workers: workers, Lanes: lanes, Figures: newByWorkload(),
		Memory: &PoolMemory{During: &TreeMemory{RSSMiB: rssMiB, PSSMiB: pssMiB}, After: &TreeMemory{RSSMiB: rssMiB, PSSMiB: pssMiB}}}
	for _, r := range rps {
		p.Figures.figures(IO, "c32").add(LoadResult{RPS: r, P50us: 50500, P99us: 52000})
	}
	return p
}

// TestLanesTargets: issue 20's goals. Requests/s of 1 × 32 over 32 × 1 per repetition, for
// every language; the tree's RSS during the load, 1 × 32 over 32 × 1, for Java, Node and
// Python only.
func TestLanesTargets(t *testing.T) {
	for _, tc := range []struct {
		lang       string
		lanes, wks *LanePool
		want       map[string]float64 // target name prefix: value
		met        map[string]bool
	}{
		{
			lang:  "java",
			lanes: lanePool("java/io-w1-l32", 1, 32, 80, 70, 620, 600, 630),
			wks:   lanePool("java/io-w32-l1", 32, 1, 1600, 1200, 630, 640, 630),
			want:  map[string]float64{"io c=32": 620.0 / 630, "tree RSS": 80.0 / 1600},
			met:   map[string]bool{"io c=32": true, "tree RSS": true},
		},
		{
			lang:  "python",
			lanes: lanePool("python/io-w1-l32", 1, 32, 300, 280, 500, 520, 510),
			wks:   lanePool("python/io-w32-l1", 32, 1, 1600, 900, 630, 630, 630),
			want:  map[string]float64{"io c=32": 510.0 / 630, "tree RSS": 300.0 / 1600},
			met:   map[string]bool{"io c=32": false, "tree RSS": false},
		},
		{
			lang:  "go",
			lanes: lanePool("go/io-w1-l32", 1, 32, 20, 15, 630),
			wks:   lanePool("go/io-w32-l1", 32, 1, 300, 60, 630),
			want:  map[string]float64{"io c=32": 1},
			met:   map[string]bool{"io c=32": true},
		},
	} {
		ll := &LanesLanguage{Lanes: tc.lanes, Workers: tc.wks}
		lanesRatios(ll, 32)
		got := lanesTargets(tc.lang, 32, ll)
		if len(got) != len(tc.want) {
			t.Errorf("%s: %d targets %+v; want %d (Go's memory is information, not a goal)", tc.lang, len(got), got, len(tc.want))
		}
		for _, tg := range got {
			prefix, _, _ := strings.Cut(tg.Name, " req/s")
			prefix, _, _ = strings.Cut(prefix, " during")
			want, ok := tc.want[prefix]
			if !ok {
				t.Errorf("%s: unexpected target %q", tc.lang, tg.Name)
				continue
			}
			if tg.Value != want || tg.Met != tc.met[prefix] {
				t.Errorf("%s: %s = %v, met %v; want %v, met %v", tc.lang, tg.Name, tg.Value, tg.Met, want, tc.met[prefix])
			}
		}
	}
}

func TestLanesRatiosPerRepetition(t *testing.T) {
	ll := &LanesLanguage{Lanes: lanePool("a", 1, 32, 50, 40, 600, 300), Workers: lanePool("b", 32, 1, 500, 200, 600, 600)}
	lanesRatios(ll, 32)
	if ll.RPSRatio.Median != 0.75 || ll.RPSRatio.Min != 0.5 || ll.RPSRatio.Max != 1 || ll.RPSRatio.N != 2 {
		t.Errorf("RPSRatio = %+v; want the median of 600/600 and 300/600, 0.75 (0.5–1)", ll.RPSRatio)
	}
	if ll.RSSRatio != 0.1 || ll.PSSRatio != 0.2 {
		t.Errorf("RSSRatio, PSSRatio = %v, %v; want 0.1, 0.2", ll.RSSRatio, ll.PSSRatio)
	}
	// A pool whose memory was not read gives no memory ratio, hence no memory target.
	ll = &LanesLanguage{Lanes: &LanePool{Figures: newByWorkload()}, Workers: &LanePool{Figures: newByWorkload()}}
	lanesRatios(ll, 32)
	if ll.RSSRatio != 0 || ll.RPSRatio.N != 0 || len(lanesTargets("java", 32, ll)) != 0 {
		t.Errorf("no figures gave %+v and targets %v; want none", ll, lanesTargets("java", 32, ll))
	}
}

func TestMostRSS(t *testing.T) {
	a, b, c := &TreeMemory{RSSMiB: 10}, &TreeMemory{RSSMiB: 30}, &TreeMemory{RSSMiB: 20}
	if got := mostRSS([]*TreeMemory{a, nil, b, c}); got != b {
		t.Errorf("mostRSS = %+v; want the sample of 30 MiB", got)
	}
	if mostRSS(nil) != nil {
		t.Errorf("mostRSS(nil) is not nil")
	}
}

// TestReadPublished: the AfterBurn hello c=8 of each language of a whole run's JSON.
func TestReadPublished(t *testing.T) {
	path := filepath.Join(t.TempDir(), "latest.json")
	os.WriteFile(path, []byte(`{"date": "2026-11-26T03:46:54Z", "languages": {
		"go": {"afterburn": {"hello": {"c1": {"rps": {"median": 9000}}, "c8": {"rps": {"median": 20905, "min": 20000, "max": 21000, "n": 3}, "p99_us": {"median": 900}}}}},
		"java": {"afterburn": {"echo1k": {"c8": {"rps": {"median": 1}}}}}}}`), 0o644)
	got, err := readPublished(path)
	if err != nil {
		t.Fatal(err)
	}
	if g := got["go"]; g == nil || g.RPS.Median != 20905 || g.P99.Median != 900 || g.Date != "2026-11-26T03:46:54Z" {
		t.Errorf("go = %+v; want hello c=8's 20905 req/s, p99 900 µs, of 2026-11-26T03:46:54Z", g)
	}
	if _, ok := got["java"]; ok {
		t.Errorf("java has no hello c=8 but got %+v", got["java"])
	}
	if _, err := readPublished(filepath.Join(t.TempDir(), "none.json")); !os.IsNotExist(err) {
		t.Errorf("readPublished of a missing file = %v; want not-exist", err)
	}
}

// TestVerifyIO: GET /io must answer the 1 KiB and take at least the handler's wait.
func TestVerifyIO(t *testing.T) {
	for _, tc := range []struct {
		name    string
		wait    time.Duration
		body    string
		wantErr string
	}{
		{"waits and answers", ioWait, ioBody, ""},
		{"answers at once", 0, ioBody, "answered in"},
		{"wrong body", ioWait, "Hello, world!\n", "1 KiB"},
	} {
		ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != "/io" {
				http.NotFound(w, r)
				return
			}
			time.Sleep(tc.wait)
			w.Write([]byte(tc.body))
		}))
		err := verifyIO(&server{name: "test", addr: strings.TrimPrefix(ts.URL, "http://")})
		ts.Close()
		if (err == nil) != (tc.wantErr == "") || (err != nil && !strings.Contains(err.Error(), tc.wantErr)) {
			t.Errorf("%s: verifyIO = %v; want an error containing %q", tc.name, err, tc.wantErr)
		}
	}
}
