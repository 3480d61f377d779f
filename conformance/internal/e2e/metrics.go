package e2e

import (
	"fmt"
	"io"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// Metrics is a parsed Prometheus text exposition: series key → value,
// where the key is the name followed by its labels sorted by label name,
// e.g. `afterburn_worker_restarts_total{reason="crashed"}`.
type Metrics struct {
	Values map[string]float64
	Types  map[string]string // metric family → counter, gauge, histogram, ...
}

var (
	sampleLine = regexp.MustCompile(`^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})?\s+(\S+)(\s+\S+)?$`)
	labelPair  = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"`)
)

// ParseMetrics reads the text format.
func ParseMetrics(text string) (*Metrics, error) {
	m := &Metrics{Values: map[string]float64{}, Types: map[string]string{}}
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		if strings.HasPrefix(line, "#") {
			f := strings.Fields(line)
			if len(f) >= 4 && f[1] == "TYPE" {
				m.Types[f[2]] = f[3]
			}
			continue
		}
		s := sampleLine.FindStringSubmatch(line)
		if s == nil {
			return nil, fmt.Errorf("metrics: bad line %q", line)
		}
		v, err := strconv.ParseFloat(s[4], 64)
		if err != nil {
			return nil, fmt.Errorf("metrics: bad value in %q", line)
		}
		var pairs []string
		for _, p := range labelPair.FindAllStringSubmatch(s[3], -1) {
			pairs = append(pairs, p[1]+"="+strconv.Quote(p[2]))
		}
		m.Values[key(s[1], pairs)] += v
	}
	return m, nil
}

func key(name string, pairs []string) string {
	if len(pairs) == 0 {
		return name
	}
	sort.Strings(pairs)
	return name + "{" + strings.Join(pairs, ",") + "}"
}

// Get returns the value of a series given labels as name, value pairs, and
// whether it exists.
func (m *Metrics) Get(name string, labels ...string) (float64, bool) {
	var pairs []string
	for i := 0; i+1 < len(labels); i += 2 {
		pairs = append(pairs, labels[i]+"="+strconv.Quote(labels[i+1]))
	}
	v, ok := m.Values[key(name, pairs)]
	return v, ok
}

// Sum adds every series of a metric name, whatever its labels.
func (m *Metrics) Sum(name string) float64 {
	total := 0.0
	for k, v := range m.Values {
		if k == name || strings.HasPrefix(k, name+"{") {
			total += v
		}
	}
	return total
}

// Metrics fetches and parses /metrics, from its own listener (§10.1).
func (t *T) Metrics() *Metrics {
	resp, err := probeClient.Get(t.WD.MetricsURL())
	if err != nil {
		t.Fatalf("GET /metrics: %v", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET /metrics: %d %v", resp.StatusCode, err)
	}
	m, err := ParseMetrics(string(body))
	if err != nil {
		t.Fatalf("GET /metrics: %v", err)
	}
	return m
}

// Metric returns one series' value, 0 when absent.
func (t *T) Metric(name string, labels ...string) float64 {
	v, _ := t.Metrics().Get(name, labels...)
	return v
}

// Restarts returns afterburn_worker_restarts_total{reason}.
func (t *T) Restarts(reason string) float64 {
	return t.Metric("afterburn_worker_restarts_total", "reason", reason)
}

// ReplacedOnceIdle waits, after a worker was replaced for reason, until idle
// workers are idle, and checks that the restart is counted by then: §9.2
// counts a worker that takes no new request while its successor starts (§2.5
// make-before-break, §9.7) as starting, not idle. A check that starts with
// WaitIdle may then count restarts without catching the end of an earlier
// check's replacement.
func (t *T) ReplacedOnceIdle(idle int, reason string, before float64) {
	t.WaitIdle(idle)
	if got := t.Restarts(reason); got != before+1 {
		t.Fatalf("/_/ready showed %d idle workers with afterburn_worker_restarts_total{reason=%q} at %v; want %v: a worker being replaced is not idle (§9.2)\n%s",
			idle, reason, got, before+1, t.Metrics().Series("afterburn_worker_restarts_total"))
	}
}

// Series lists every series of a metric name with a value other than 0,
// e.g. `afterburn_worker_restarts_total{reason="exited"}=1`, for a failure
// message: a restart counted under another reason than the one awaited.
func (m *Metrics) Series(name string) string {
	var out []string
	for k, v := range m.Values {
		if (k == name || strings.HasPrefix(k, name+"{")) && v != 0 {
			out = append(out, fmt.Sprintf("%s=%v", k, v))
		}
	}
	sort.Strings(out)
	if len(out) == 0 {
		return "none"
	}
	return strings.Join(out, ", ")
}

// WaitMetric waits until a series reaches at least min; its failure lists
// every series of the name, so that a restart counted under another reason
// than the one awaited shows.
func (t *T) WaitMetric(min float64, name string, labels ...string) {
	what := fmt.Sprintf("%s%v ≥ %v", name, labels, min)
	t.Eventually(what, func() (bool, string) {
		m := t.Metrics()
		v, _ := m.Get(name, labels...)
		return v >= min, fmt.Sprintf("%v (all %s series: %s)", v, name, m.Series(name))
	})
}
