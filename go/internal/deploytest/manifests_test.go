package deploytest

// The manifests under deploy/kubernetes are examples people copy; each test
// here holds one of their claims to the watchdog: the settings they set
// exist, the probe paths are the ones it serves, the grace period covers its
// shutdown, and every metric an autoscaler reads is one it exports.

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

const manifestDir = repoRoot + "/deploy/kubernetes"

// decodeAll parses every YAML document of a file into generic values.
func decodeAll(t *testing.T, path string) []map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	var docs []map[string]any
	for {
		var doc map[string]any
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if doc != nil {
			docs = append(docs, doc)
		}
	}
	if len(docs) == 0 {
		t.Fatalf("%s: no YAML document", path)
	}
	return docs
}

// at walks a path of map keys and list indexes ("spec", "containers", 0).
func at(v any, path ...any) any {
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, ok := v.(map[string]any)
			if !ok {
				return nil
			}
			v = m[k]
		case int:
			l, ok := v.([]any)
			if !ok || k >= len(l) {
				return nil
			}
			v = l[k]
		}
	}
	return v
}

// str is a scalar as text, whatever type YAML gave it.
func str(v any) string {
	if v == nil {
		return ""
	}
	return fmt.Sprint(v)
}

func TestManifestsParse(t *testing.T) {
	files, _ := filepath.Glob(manifestDir + "/*.y*ml")
	if len(files) < 7 {
		t.Fatalf("%s holds %d YAML files; want deployment, service, knative-service, openfaas-stack, hpa, keda-scaledobject and prometheus-adapter-rules", manifestDir, len(files))
	}
	for _, f := range files {
		for i, doc := range decodeAll(t, f) {
			if filepath.Base(f) == "openfaas-stack.yml" {
				continue // faas-cli's own format, checked in TestOpenFaaSStack
			}
			if str(doc["apiVersion"]) == "" || str(doc["kind"]) == "" || str(at(doc, "metadata", "name")) == "" {
				t.Errorf("%s document %d: no apiVersion, kind or metadata.name", filepath.Base(f), i)
			}
		}
	}
}

// container is the watchdog container of a pod template, with its env.
type container struct {
	spec map[string]any
	env  map[string]string
}

func watchdogContainer(t *testing.T, file string, podSpec any) container {
	t.Helper()
	c, ok := at(podSpec, "containers", 0).(map[string]any)
	if !ok {
		t.Fatalf("%s: no container", file)
	}
	env := map[string]string{}
	list, _ := c["env"].([]any)
	for _, e := range list {
		env[str(at(e, "name"))] = str(at(e, "value"))
	}
	return container{c, env}
}

// checkEnv: every variable is a watchdog setting (a typo would be ignored
// silently), its value parses, and Knative's PORT is not overridden.
func checkEnv(t *testing.T, file string, env map[string]string, flags map[string]bool) {
	t.Helper()
	for name, value := range env {
		if !flags[name] {
			t.Errorf("%s: env %s is not a watchdog setting (see docs/configuration.md)", file, name)
		}
		if strings.HasSuffix(name, "_timeout") || strings.HasSuffix(name, "_interval") {
			if _, err := time.ParseDuration(value); err != nil {
				t.Errorf("%s: env %s=%q: %v", file, name, value, err)
			}
		}
	}
}

// probePath is a probe's HTTP path and port ("" when it names none).
func probePath(c container, probe string) (path, port string) {
	return str(at(c.spec, probe, "httpGet", "path")), str(at(c.spec, probe, "httpGet", "port"))
}

// portNamed resolves a probe port (a name or a number) to the container port.
func portNamed(c container, p string) string {
	ports, _ := c.spec["ports"].([]any)
	for _, cp := range ports {
		if str(at(cp, "name")) == p || str(at(cp, "containerPort")) == p {
			return str(at(cp, "containerPort"))
		}
	}
	return ""
}

func seconds(t *testing.T, file, s string) float64 {
	t.Helper()
	d, err := time.ParseDuration(s)
	if err != nil {
		t.Fatalf("%s: duration %q: %v", file, s, err)
	}
	return d.Seconds()
}

func TestDeployment(t *testing.T) {
	flags := watchdogFlags(t)
	const file = "deployment.yaml"
	doc := decodeAll(t, filepath.Join(manifestDir, file))[0]
	pod := at(doc, "spec", "template", "spec")
	c := watchdogContainer(t, file, pod)
	checkEnv(t, file, c.env, flags)

	// The probes: §9.2's paths, on the port the watchdog serves.
	servePort := c.env["port"]
	if servePort == "" {
		servePort = "8080"
	}
	for probe, want := range map[string]string{"readinessProbe": "/_/ready", "livenessProbe": "/_/health"} {
		path, port := probePath(c, probe)
		if path != want {
			t.Errorf("%s: %s path %q; want %q", file, probe, path, want)
		}
		if got := portNamed(c, port); got != servePort {
			t.Errorf("%s: %s port %q is container port %q; the watchdog serves %s", file, probe, port, got, servePort)
		}
	}
	// §9.4: the drain must end before the kubelet's SIGKILL.
	grace, err := strconv.ParseFloat(str(at(pod, "terminationGracePeriodSeconds")), 64)
	if err != nil {
		t.Fatalf("%s: terminationGracePeriodSeconds: %v", file, err)
	}
	shutdown := 15.0 // the watchdog's default
	if s := c.env["shutdown_timeout"]; s != "" {
		shutdown = seconds(t, file, s)
	}
	preStop, _ := strconv.ParseFloat(str(at(c.spec, "lifecycle", "preStop", "sleep", "seconds")), 64)
	// §9.4: up to a second past shutdown_timeout to answer the requests it cut.
	if grace <= preStop+shutdown+1 {
		t.Errorf("%s: terminationGracePeriodSeconds %v <= preStop %v s + shutdown_timeout %v s + 1 s to answer what it cut", file, grace, preStop, shutdown)
	}
	// One worker per requested CPU, as the manifest's comment says.
	cpu := str(at(c.spec, "resources", "requests", "cpu"))
	cores, err := cpuCores(cpu)
	if err != nil {
		t.Fatalf("%s: cpu request: %v", file, err)
	}
	if want := strconv.Itoa(max(1, int(math.Ceil(cores)))); c.env["workers"] != want {
		t.Errorf("%s: workers %q with a CPU request of %s; want %s", file, c.env["workers"], cpu, want)
	}
	if str(at(c.spec, "resources", "limits", "memory")) == "" {
		t.Errorf("%s: no memory limit", file)
	}
	// /metrics on its own port, which the pod annotations point Prometheus at.
	ann := at(doc, "spec", "template", "metadata", "annotations")
	if mp := metricsPort(c.env); mp == "-1" || mp == servePort || str(at(ann, "prometheus.io/port")) != mp {
		t.Errorf("%s: metrics_port %q, prometheus.io/port %q; want one port of their own, the same", file, mp, str(at(ann, "prometheus.io/port")))
	}
	if mp := metricsPort(c.env); portNamed(c, "metrics") != mp {
		t.Errorf("%s: container port \"metrics\" is %q; the watchdog serves /metrics on %s", file, portNamed(c, "metrics"), mp)
	}
}

// metricsPort is the port /metrics is served on given a container's watchdog
// settings: metrics_port, 8081 when unset (PROTOCOL.md §10.2); "-1" means on
// the function port.
func metricsPort(env map[string]string) string {
	if mp := env["metrics_port"]; mp != "" {
		return mp
	}
	return "8081"
}

// cpuCores reads a Kubernetes CPU quantity: "2", "1.5" or "500m".
func cpuCores(q string) (float64, error) {
	if m, ok := strings.CutSuffix(q, "m"); ok {
		v, err := strconv.ParseFloat(m, 64)
		return v / 1000, err
	}
	return strconv.ParseFloat(q, 64)
}

func TestService(t *testing.T) {
	svc := decodeAll(t, filepath.Join(manifestDir, "service.yaml"))[0]
	dep := decodeAll(t, filepath.Join(manifestDir, "deployment.yaml"))[0]
	c := watchdogContainer(t, "deployment.yaml", at(dep, "spec", "template", "spec"))
	if got, want := fmt.Sprint(at(svc, "spec", "selector")), fmt.Sprint(at(dep, "spec", "template", "metadata", "labels")); got != want {
		t.Errorf("service.yaml selects %s; the Deployment's pods carry %s", got, want)
	}
	ports, _ := at(svc, "spec", "ports").([]any)
	for _, p := range ports {
		target := portNamed(c, str(at(p, "targetPort")))
		if target == metricsPort(c.env) {
			t.Errorf("service.yaml exposes the metrics port %s", target)
		}
		if target != c.env["port"] {
			t.Errorf("service.yaml targets container port %q; the watchdog serves %s", target, c.env["port"])
		}
	}
	if len(ports) == 0 {
		t.Error("service.yaml has no port")
	}
}

func TestKnativeService(t *testing.T) {
	const file = "knative-service.yaml"
	doc := decodeAll(t, filepath.Join(manifestDir, file))[0]
	if str(doc["apiVersion"]) != "serving.knative.dev/v1" || str(doc["kind"]) != "Service" {
		t.Fatalf("%s: %v %v; want serving.knative.dev/v1 Service", file, doc["apiVersion"], doc["kind"])
	}
	spec := at(doc, "spec", "template", "spec")
	c := watchdogContainer(t, file, spec)
	checkEnv(t, file, c.env, watchdogFlags(t))
	// Knative sets PORT; `port` would win over it (§10.2), and PORT is Knative's to set.
	for _, name := range []string{"port", "PORT"} {
		if _, ok := c.env[name]; ok {
			t.Errorf("%s: sets %s; Knative's PORT must reach the watchdog", file, name)
		}
	}
	if str(at(c.spec, "ports", 0, "containerPort")) == "" {
		t.Errorf("%s: no containerPort, so Knative's PORT is its default", file)
	}
	for probe, want := range map[string]string{"readinessProbe": "/_/ready", "livenessProbe": "/_/health"} {
		if path, port := probePath(c, probe); path != want || port != "" {
			t.Errorf("%s: %s %q port %q; want %q on the serving port (no port)", file, probe, path, port, want)
		}
	}
	exec := seconds(t, file, c.env["exec_timeout"])
	if timeout, _ := strconv.ParseFloat(str(at(spec, "timeoutSeconds")), 64); timeout < exec {
		t.Errorf("%s: timeoutSeconds %v < exec_timeout %v s", file, timeout, exec)
	}
	if mp := metricsPort(c.env); str(at(doc, "spec", "template", "metadata", "annotations", "prometheus.io/port")) != mp || mp == "-1" {
		t.Errorf("%s: metrics_port %q must be a port of its own and match the prometheus.io/port annotation", file, mp)
	}
}

func TestOpenFaaSStack(t *testing.T) {
	const file = "openfaas-stack.yml"
	doc := decodeAll(t, filepath.Join(manifestDir, file))[0]
	fns, _ := doc["functions"].(map[string]any)
	if str(at(doc, "provider", "name")) != "openfaas" || len(fns) == 0 {
		t.Fatalf("%s: not a stack file with functions", file)
	}
	flags := watchdogFlags(t)
	for name, fn := range fns {
		env := map[string]string{}
		m, _ := at(fn, "environment").(map[string]any)
		for k, v := range m {
			env[k] = str(v)
		}
		checkEnv(t, file+" "+name, env, flags)
		for _, key := range []string{"image", "lang", "handler"} {
			if str(at(fn, key)) == "" {
				t.Errorf("%s: function %s has no %s", file, name, key)
			}
		}
		// The gateway proxies every path of the function port: /metrics must be elsewhere.
		if mp := metricsPort(env); mp == "-1" || mp == "8080" || str(at(fn, "annotations", "prometheus.io.port")) != mp {
			t.Errorf("%s: function %s: metrics_port %q must be off 8080 and match prometheus.io.port", file, name, mp)
		}
	}
}

// TestAutoscalingMetricsAreExported: the HPA, its adapter rules and the
// KEDA triggers read only metrics the watchdog exports.
func TestAutoscalingMetricsAreExported(t *testing.T) {
	s := scrapeWatchdog(t)
	check := func(where, expr string) {
		t.Helper()
		if !selector.MatchString(expr) {
			t.Errorf("%s: %q names no watchdog metric", where, expr)
		}
		for _, p := range s.checkQuery(expr) {
			t.Errorf("%s: %s in\n\t%s", where, p, expr)
		}
	}

	// prometheus-adapter: each rule reads an exported series and publishes a name.
	adapter := decodeAll(t, filepath.Join(manifestDir, "prometheus-adapter-rules.yaml"))[0]
	var cfg struct {
		Rules []struct {
			SeriesQuery string `yaml:"seriesQuery"`
			Name        struct {
				Matches string `yaml:"matches"`
				As      string `yaml:"as"`
			} `yaml:"name"`
			MetricsQuery string `yaml:"metricsQuery"`
		} `yaml:"rules"`
	}
	if err := yaml.Unmarshal([]byte(str(at(adapter, "data", "config.yaml"))), &cfg); err != nil || len(cfg.Rules) == 0 {
		t.Fatalf("prometheus-adapter-rules.yaml: data.config.yaml has no rules (%v)", err)
	}
	published := map[string]bool{}
	for _, r := range cfg.Rules {
		check("prometheus-adapter-rules.yaml seriesQuery", r.SeriesQuery)
		series := strings.Trim(r.Name.Matches, "^$")
		check("prometheus-adapter-rules.yaml metricsQuery", strings.ReplaceAll(r.MetricsQuery, "<<.Series>>", series))
		published[r.Name.As] = true
	}

	hpa := decodeAll(t, filepath.Join(manifestDir, "hpa.yaml"))[0]
	if str(hpa["apiVersion"]) != "autoscaling/v2" {
		t.Errorf("hpa.yaml: apiVersion %v; want autoscaling/v2", hpa["apiVersion"])
	}
	metrics, _ := at(hpa, "spec", "metrics").([]any)
	for i, m := range metrics {
		name := str(at(m, "pods", "metric", "name"))
		if str(at(m, "type")) != "Pods" || !published[name] {
			t.Errorf("hpa.yaml metric %d: %s %q; want a Pods metric that prometheus-adapter-rules.yaml publishes (%v)", i, at(m, "type"), name, published)
		}
	}
	if len(metrics) == 0 {
		t.Error("hpa.yaml: no metric")
	}

	keda := decodeAll(t, filepath.Join(manifestDir, "keda-scaledobject.yaml"))[0]
	triggers, _ := at(keda, "spec", "triggers").([]any)
	queried := map[string]bool{}
	for i, tr := range triggers {
		if str(at(tr, "type")) != "prometheus" {
			t.Errorf("keda-scaledobject.yaml trigger %d: type %v; want prometheus", i, at(tr, "type"))
		}
		q := str(at(tr, "metadata", "query"))
		check(fmt.Sprintf("keda-scaledobject.yaml trigger %d", i), q)
		for _, m := range selector.FindAllStringSubmatch(q, -1) {
			queried[m[1]] = true
		}
		if _, err := strconv.ParseFloat(str(at(tr, "metadata", "threshold")), 64); err != nil {
			t.Errorf("keda-scaledobject.yaml trigger %d: threshold: %v", i, err)
		}
	}
	for _, want := range []string{"afterburn_requests_in_flight", "afterburn_queue_depth", "afterburn_requests_rejected_total"} {
		if !queried[want] {
			t.Errorf("keda-scaledobject.yaml: no trigger on %s", want)
		}
	}
	// The deployment both autoscalers target is the one in deployment.yaml.
	dep := str(at(decodeAll(t, filepath.Join(manifestDir, "deployment.yaml"))[0], "metadata", "name"))
	for file, ref := range map[string]string{"hpa.yaml": str(at(hpa, "spec", "scaleTargetRef", "name")),
		"keda-scaledobject.yaml": str(at(keda, "spec", "scaleTargetRef", "name"))} {
		if ref != dep {
			t.Errorf("%s scales %q; deployment.yaml is %q", file, ref, dep)
		}
	}
}
