package deploytest

// The dashboard and the autoscaling manifests are PromQL; a misspelt metric
// there yields an empty panel or an autoscaler that never scales, silently.
// These tests scrape a real watchdog and hold every query to what it
// exports.

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

const dashboardFile = repoRoot + "/deploy/grafana/afterburn-dashboard.json"

// scrape is one /metrics answer, parsed.
type scrape struct {
	text     []byte
	families map[string]*dto.MetricFamily
	// series maps each sample name (a histogram's X_bucket, X_sum and X_count
	// included) to the label sets it has.
	series map[string][]map[string]string
}

// scrapeWatchdog starts a watchdog, sends it requests answered 200 and 404
// (so that the labelled request counter and the histograms have samples),
// and scrapes /metrics.
func scrapeWatchdog(t *testing.T) *scrape {
	t.Helper()
	w := startWatchdog(t)
	for _, path := range []string{"/hello", "/status/404"} {
		get(t, "http://"+w.addr+path)
	}
	code, body := get(t, "http://"+w.metricsAddr+"/metrics")
	if code != 200 {
		t.Fatalf("GET /metrics: %d\n%s", code, body)
	}
	parser := expfmt.NewTextParser(model.LegacyValidation)
	families, err := parser.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatalf("/metrics is not Prometheus text format: %v\n%s", err, body)
	}
	s := &scrape{text: []byte(body), families: families, series: map[string][]map[string]string{}}
	for name, f := range families {
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			switch f.GetType() {
			case dto.MetricType_HISTOGRAM:
				for _, suffix := range []string{"_bucket", "_sum", "_count"} {
					s.series[name+suffix] = append(s.series[name+suffix], labels)
				}
			case dto.MetricType_SUMMARY:
				for _, suffix := range []string{"", "_sum", "_count"} {
					s.series[name+suffix] = append(s.series[name+suffix], labels)
				}
			default:
				s.series[name] = append(s.series[name], labels)
			}
		}
	}
	return s
}

// targetLabels are added by Prometheus's scrape configuration (and
// Grafana's variables), never by the watchdog, so a query may match on them.
var targetLabels = map[string]bool{"job": true, "instance": true, "namespace": true, "pod": true,
	"container": true, "service": true, "function_name": true, "le": true}

var (
	// selector is a metric name of the watchdog's families (ours, and the
	// Go and process collectors'), with its label matchers if any.
	selector = regexp.MustCompile(`\b((?:afterburn|process|go)_[a-zA-Z0-9_]+)\b(\{[^}]*\})?`)
	matcher  = regexp.MustCompile(`(\w+)\s*(=~|!~|!=|=)\s*"([^"]*)"`)
)

// checkQuery reports each metric of expr the scrape lacks, each label
// matcher on a label the metric does not have, and each equality matcher on
// a value no series has.
func (s *scrape) checkQuery(expr string) []string {
	var problems []string
	for _, m := range selector.FindAllStringSubmatch(expr, -1) {
		name, matchers := m[1], m[2]
		sets, ok := s.series[name]
		if !ok {
			problems = append(problems, "metric "+name+" is not exported")
			continue
		}
		for _, mm := range matcher.FindAllStringSubmatch(matchers, -1) {
			label, op, value := mm[1], mm[2], mm[3]
			if targetLabels[label] {
				continue
			}
			has, hasValue := false, false
			for _, set := range sets {
				if v, ok := set[label]; ok {
					has = true
					hasValue = hasValue || v == value
				}
			}
			switch {
			case !has:
				problems = append(problems, name+" has no label "+label)
			case op == "=" && !hasValue:
				problems = append(problems, name+" has no series with "+label+"=\""+value+"\"")
			}
		}
	}
	return problems
}

// dashboardQueries returns every PromQL expression of the dashboard: its
// panels' targets and its template variables' queries.
func dashboardQueries(t *testing.T) []string {
	t.Helper()
	var d struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
		Templating struct {
			List []struct {
				Type  string `json:"type"`
				Query any    `json:"query"`
			} `json:"list"`
		} `json:"templating"`
	}
	b, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}
	var exprs []string
	for _, p := range d.Panels {
		for _, tg := range p.Targets {
			if tg.Expr != "" {
				exprs = append(exprs, tg.Expr)
			}
		}
	}
	for _, v := range d.Templating.List {
		if q, ok := v.Query.(string); ok && v.Type == "query" {
			exprs = append(exprs, q)
		}
	}
	if len(exprs) == 0 {
		t.Fatalf("%s: no query found", dashboardFile)
	}
	return exprs
}

func TestDashboardQueriesAreExported(t *testing.T) {
	s := scrapeWatchdog(t)
	for _, expr := range dashboardQueries(t) {
		for _, p := range s.checkQuery(expr) {
			t.Errorf("%s: %s in\n\t%s", filepath.Base(dashboardFile), p, expr)
		}
	}
}

// TestDashboardChartsEveryMetric: each afterburn_ family the watchdog
// exports appears in some panel, so a new metric is not forgotten.
func TestDashboardChartsEveryMetric(t *testing.T) {
	s := scrapeWatchdog(t)
	queried := map[string]bool{}
	for _, expr := range dashboardQueries(t) {
		for _, m := range selector.FindAllStringSubmatch(expr, -1) {
			queried[strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(m[1], "_bucket"), "_sum"), "_count")] = true
		}
	}
	var missing []string
	for name := range s.families {
		if strings.HasPrefix(name, "afterburn_") && !queried[name] {
			missing = append(missing, name)
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Errorf("%s charts none of %q", filepath.Base(dashboardFile), missing)
	}
}

func TestCheckQuery(t *testing.T) {
	s := &scrape{series: map[string][]map[string]string{
		"afterburn_workers":       {{"state": "idle"}, {"state": "busy"}},
		"afterburn_queue_depth":   {{}},
		"afterburn_x_seconds_sum": {{}},
	}}
	for _, tc := range []struct {
		expr string
		want string
	}{
		{`sum(afterburn_workers{state="busy", namespace="$ns"}) / sum(afterburn_workers)`, ""},
		{`afterburn_queue_depth{pod=~"a.*"} + afterburn_x_seconds_sum`, ""},
		{`afterburn_workers{state=~"b.*"}`, ""},
		{`afterburn_worker{state="busy"}`, "metric afterburn_worker is not exported"},
		{`afterburn_workers{state="sleeping"}`, `afterburn_workers has no series with state="sleeping"`},
		{`afterburn_queue_depth{sate="idle"}`, "afterburn_queue_depth has no label sate"},
	} {
		if got := strings.Join(s.checkQuery(tc.expr), "; "); got != tc.want {
			t.Errorf("checkQuery(%s) = %q; want %q", tc.expr, got, tc.want)
		}
	}
}

// TestPromtoolCheckMetrics lints a real scrape with Prometheus's own tool
// (Debian: apt-get install prometheus, which gives /usr/bin/promtool).
func TestPromtoolCheckMetrics(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Skip("promtool not found; install it with `apt-get install -y prometheus` (Debian) to lint /metrics")
	}
	s := scrapeWatchdog(t)
	cmd := exec.Command(promtool, "check", "metrics")
	cmd.Stdin = bytes.NewReader(s.text)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Errorf("promtool check metrics: %v\n%s\nscrape:\n%s", err, out, s.text)
	} else if len(bytes.TrimSpace(out)) > 0 {
		t.Logf("promtool check metrics:\n%s", out)
	}
}
