package deploytest

// The autoscaling targets are a pod's concurrency, workers × lanes (docs/operations.md,
// "Capacity"), not workers alone; and the KEDA queries take the namespace as a parameter
// instead of naming one (issue 32).

import (
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// concurrency is workers × lanes of a container's environment; lanes is 1 unless set.
func concurrency(t *testing.T, file string, env map[string]string) float64 {
	t.Helper()
	workers, err := strconv.Atoi(env["workers"])
	if err != nil || workers < 1 {
		t.Fatalf("%s: workers %q; want a number (the autoscaling targets are computed from it)", file, env["workers"])
	}
	lanes := 1
	if v, ok := env["lanes"]; ok {
		if lanes, err = strconv.Atoi(v); err != nil || lanes < 1 {
			t.Fatalf("%s: lanes %q; want a number", file, v)
		}
	}
	return float64(workers * lanes)
}

// quantity parses a Kubernetes quantity of the forms the manifests use: 1600m, 1.6, 2.
func quantity(t *testing.T, q string) float64 {
	t.Helper()
	if m, ok := strings.CutSuffix(q, "m"); ok {
		v, err := strconv.ParseFloat(m, 64)
		if err != nil {
			t.Fatalf("quantity %q: %v", q, err)
		}
		return v / 1000
	}
	v, err := strconv.ParseFloat(q, 64)
	if err != nil {
		t.Fatalf("quantity %q: %v", q, err)
	}
	return v
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

func TestAutoscalingTargetsAreWorkersTimesLanes(t *testing.T) {
	dep := decodeAll(t, filepath.Join(manifestDir, "deployment.yaml"))[0]
	perPod := concurrency(t, "deployment.yaml", watchdogContainer(t, "deployment.yaml", at(dep, "spec", "template", "spec")).env)

	hpa := decodeAll(t, filepath.Join(manifestDir, "hpa.yaml"))[0]
	metrics, _ := at(hpa, "spec", "metrics").([]any)
	found := false
	for _, m := range metrics {
		if str(at(m, "pods", "metric", "name")) == "afterburn_requests_in_flight" {
			found = true
			if got := quantity(t, str(at(m, "pods", "target", "averageValue"))); !near(got, 0.8*perPod) {
				t.Errorf("hpa.yaml: in-flight target %v per pod; want 0.8 × workers × lanes = %v", got, 0.8*perPod)
			}
		}
	}
	if !found {
		t.Error("hpa.yaml: no target on afterburn_requests_in_flight")
	}

	keda := decodeAll(t, filepath.Join(manifestDir, "keda-scaledobject.yaml"))[0]
	triggers, _ := at(keda, "spec", "triggers").([]any)
	found = false
	for _, tr := range triggers {
		if strings.Contains(str(at(tr, "metadata", "query")), "afterburn_requests_in_flight") {
			found = true
			if got := quantity(t, str(at(tr, "metadata", "threshold"))); !near(got, 0.8*perPod) {
				t.Errorf("keda-scaledobject.yaml: in-flight threshold %v per replica; want 0.8 × workers × lanes = %v", got, 0.8*perPod)
			}
		}
	}
	if !found {
		t.Error("keda-scaledobject.yaml: no trigger on afterburn_requests_in_flight")
	}

	kn := decodeAll(t, filepath.Join(manifestDir, "knative-service.yaml"))[0]
	c := watchdogContainer(t, "knative-service.yaml", at(kn, "spec", "template", "spec"))
	ann := at(kn, "spec", "template", "metadata", "annotations")
	if got, want := quantity(t, str(at(ann, "autoscaling.knative.dev/target"))), concurrency(t, "knative-service.yaml", c.env); !near(got, want) {
		t.Errorf("knative-service.yaml: autoscaling target %v; want workers × lanes = %v", got, want)
	}
	if got := str(at(kn, "spec", "template", "spec", "containerConcurrency")); got != c.env["max_inflight"] {
		t.Errorf("knative-service.yaml: containerConcurrency %s; want max_inflight %s", got, c.env["max_inflight"])
	}
}

// The KEDA file is applied as docs/operations.md says, with ${NAMESPACE} substituted
// (envsubst '$NAMESPACE'): every query then selects that namespace, and the object lives in
// it; no namespace is written into the file.
func TestKEDANamespaceIsAParameter(t *testing.T) {
	const file = "keda-scaledobject.yaml"
	b, err := os.ReadFile(filepath.Join(manifestDir, file))
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	for _, m := range regexp.MustCompile(`\$\{?(\w+)`).FindAllStringSubmatch(text, -1) {
		if m[1] != "NAMESPACE" {
			t.Errorf("%s: ${%s}: envsubst '$NAMESPACE' leaves it as it is", file, m[1])
		}
	}
	if m := regexp.MustCompile(`namespace\s*=~?\s*"[^$"][^"]*"`).FindString(text); m != "" {
		t.Errorf("%s: a query names a namespace (%s); want namespace=\"${NAMESPACE}\"", file, m)
	}
	const ns = "fn-prod"
	applied := os.Expand(text, func(v string) string {
		if v == "NAMESPACE" {
			return ns
		}
		return "$" + v
	})
	var doc map[string]any
	if err := yaml.Unmarshal([]byte(applied), &doc); err != nil {
		t.Fatalf("%s with NAMESPACE=%s: %v", file, ns, err)
	}
	if got := str(at(doc, "metadata", "namespace")); got != ns {
		t.Errorf("%s: metadata.namespace %q after substitution; want %q (the Deployment's)", file, got, ns)
	}
	triggers, _ := at(doc, "spec", "triggers").([]any)
	for i, tr := range triggers {
		if q := str(at(tr, "metadata", "query")); !strings.Contains(q, `namespace="`+ns+`"`) {
			t.Errorf("%s trigger %d: %s; want it to select namespace=%q", file, i, q, ns)
		}
	}
	if len(triggers) == 0 {
		t.Errorf("%s: no trigger", file)
	}
}
