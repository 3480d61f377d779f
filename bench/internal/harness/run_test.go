package harness

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"
)

// scenarioRig measures scenarios through measureRepetitions and a synthetic guard, as
// TestFrontMeasuresPairsInterleaved does: no process runs. fail, when set, makes a
// configuration's run fail at a repetition; every run is counted by configuration.
type scenarioRig struct {
	t     *testing.T
	guard *quietGuard
	o     Options
	runs  map[string]int
	fail  func(key string, run int) error // run counts from 1, per configuration
	onRun func(key string)                // after each run that does not fail
}

func newScenarioRig(t *testing.T, ctx context.Context) *scenarioRig {
	quiet := synthetic{busy1: 250, tree: 2480 * time.Millisecond, requests: 30000, cal: [2]time.Duration{6 * time.Millisecond, 6 * time.Millisecond}}
	r := &scenarioRig{t: t, guard: syntheticGuard(), runs: map[string]int{},
		o: Options{Reps: 3, Workloads: []Workload{Hello}, Conns: []int{1}, Log: &strings.Builder{}}}
	r.guard.ctx = ctx
	r.guard.observe = func(s *server, _ func() (LoadResult, error)) (LoadResult, window, error) {
		r.runs[s.name]++
		if r.fail != nil {
			if err := r.fail(s.name, r.runs[s.name]); err != nil {
				return LoadResult{}, window{}, err
			}
		}
		if r.onRun != nil {
			r.onRun(s.name)
		}
		w, lr := quiet.window(t)
		return lr, w, nil
	}
	return r
}

// scenario is a scenario of one configuration, key, measured in the rig's repetitions; into
// puts what it measured into the results, which runScenarios applies only if it completed.
func (r *scenarioRig) scenario(name, key string, into func(*Results, ByWorkload)) scenario {
	return scenario{name, func() (func(*Results), error) {
		c := &config{key: key, srv: &server{name: key}, figs: newByWorkload()}
		err := measureRepetitions(r.o, Load{}, r.guard, func(int) []*config { return []*config{c} }, 16)
		return func(res *Results) { into(res, c.figs) }, err
	}}
}

func keepAsLanguage(res *Results, b ByWorkload) {
	res.Order = []string{"go"}
	res.Languages = map[string]*LanguageResults{"go": {AfterBurn: b}}
}

func keepAsLanes(res *Results, b ByWorkload) {
	res.Lanes = &Lanes{Order: []string{"go"}}
}

func keepAsIsolation(res *Results, b ByWorkload) {
	res.Isolation = &Isolation{Functions: []*IsolationFunction{{Name: "hello", Figures: map[string]ByConcurrency{IsoRequest: b[Hello]}}}}
}

func keepAsFront(res *Results, _ ByWorkload) {
	res.Front = &Front{}
}

// TestFailedScenarioKeepsTheCompletedOnes: today's run. The languages and lanes scenarios
// complete; the isolation scenario fails at its second repetition: the results keep the
// completed scenarios' figures, every repetition of them; the isolation scenario's one
// measured repetition is dropped, not published as its figures; the front scenario after it
// does not run; the failure names the scenario and its error, which Run returns too.
func TestFailedScenarioKeepsTheCompletedOnes(t *testing.T) {
	rig := newScenarioRig(t, context.Background())
	notForked := errors.New("python/hello-request: 4 of 4 workers were not forked")
	rig.fail = func(key string, run int) error {
		if key == "isolation/python" && run == 2 {
			return notForked
		}
		return nil
	}
	res, err := runScenarios(context.Background(), &Results{}, []scenario{
		rig.scenario("languages", "go/afterburn", keepAsLanguage),
		rig.scenario("lanes", "lanes/go", keepAsLanes),
		rig.scenario("isolation", "isolation/python", keepAsIsolation),
		rig.scenario("front", "front/go", keepAsFront),
	})
	if res == nil {
		t.Fatalf("no results with the error %v: the completed scenarios are thrown away", err)
	}
	if err == nil || !strings.Contains(err.Error(), "isolation: ") || !strings.Contains(err.Error(), notForked.Error()) {
		t.Fatalf("error %v; want the isolation scenario's, named", err)
	}
	if l := res.Languages["go"]; l == nil || len(l.AfterBurn[Hello]["c1"].Runs) != rig.o.Reps || !slices.Equal(res.Order, []string{"go"}) {
		t.Errorf("the languages scenario's figures are not kept whole: %+v", res.Languages)
	}
	if res.Lanes == nil || rig.runs["lanes/go"] != rig.o.Reps {
		t.Errorf("the lanes scenario (%d runs) is not kept: %+v", rig.runs["lanes/go"], res.Lanes)
	}
	if rig.runs["isolation/python"] != 2 {
		t.Fatalf("the isolation scenario ran %d times; want its failure at the second", rig.runs["isolation/python"])
	}
	if res.Isolation != nil {
		t.Errorf("the failed isolation scenario's first repetition is in the results as its figures")
	}
	if res.Front != nil || rig.runs["front/go"] != 0 {
		t.Errorf("the front scenario ran after the failure (%d runs)", rig.runs["front/go"])
	}
	f := res.Failure
	if f == nil {
		t.Fatal("no failure recorded: the results read as a whole run")
	}
	if f.Scenario != "isolation" || f.Error != err.Error() || f.Interrupted ||
		!slices.Equal(f.Completed, []string{"languages", "lanes"}) || !slices.Equal(f.NotRun, []string{"front"}) {
		t.Errorf("failure %+v; want isolation's error, not interrupted, languages and lanes completed, front not run", f)
	}
	if !res.Partial() {
		t.Errorf("Partial() is false for a run with a failure")
	}
}

// TestEveryScenarioCompletes: without a failure the results are whole, not partial.
func TestEveryScenarioCompletes(t *testing.T) {
	rig := newScenarioRig(t, context.Background())
	res, err := runScenarios(context.Background(), &Results{}, []scenario{
		rig.scenario("languages", "go/afterburn", keepAsLanguage),
		rig.scenario("isolation", "isolation/python", keepAsIsolation),
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Partial() || res.Languages["go"] == nil || res.Isolation == nil {
		t.Errorf("a run whose scenarios completed: failure %+v, languages %v, isolation %v", res.Failure, res.Languages, res.Isolation)
	}
}

// TestInterruptKeepsTheCompletedScenarios: SIGINT during the lanes scenario's second run
// (main's ctx cancelled). The guard starts no further run, the lanes scenario ends, its one
// run dropped, and the fork scenario after it does not start; the languages scenario, which
// completed, is kept and the failure says interrupted.
func TestInterruptKeepsTheCompletedScenarios(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rig := newScenarioRig(t, ctx)
	rig.onRun = func(key string) {
		if key == "lanes/go" && rig.runs[key] == 2 {
			cancel()
		}
	}
	res, err := runScenarios(ctx, &Results{}, []scenario{
		rig.scenario("languages", "go/afterburn", keepAsLanguage),
		rig.scenario("lanes", "lanes/go", keepAsLanes),
		rig.scenario("fork", "fork/python", keepAsFront),
	})
	if res == nil {
		t.Fatalf("no results with the error %v", err)
	}
	if err == nil || !strings.Contains(err.Error(), "lanes: lanes/go: interrupted before rep 3 hello c=1: context canceled") {
		t.Fatalf("error %v; want the lanes scenario interrupted before its third run", err)
	}
	if rig.runs["lanes/go"] != 2 || rig.runs["fork/python"] != 0 {
		t.Errorf("runs after the interrupt: lanes %d (want 2), fork %d (want 0)", rig.runs["lanes/go"], rig.runs["fork/python"])
	}
	if res.Languages["go"] == nil || res.Lanes != nil || res.Front != nil {
		t.Errorf("results: languages %v, lanes %v, fork %v; want only the languages scenario", res.Languages, res.Lanes, res.Front)
	}
	if f := res.Failure; f == nil || f.Scenario != "lanes" || !f.Interrupted || !slices.Equal(f.Completed, []string{"languages"}) ||
		!slices.Equal(f.NotRun, []string{"fork"}) {
		t.Errorf("failure %+v; want lanes interrupted, languages completed, fork not run", f)
	}
}

// TestInterruptBetweenScenarios: an interrupt while nothing is under the guard (the
// languages scenario's cold starts, say) lets that scenario complete and starts no other.
func TestInterruptBetweenScenarios(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rig := newScenarioRig(t, ctx)
	langs := rig.scenario("languages", "go/afterburn", keepAsLanguage)
	measure := langs.measure
	langs.measure = func() (func(*Results), error) {
		keep, err := measure()
		cancel()
		return keep, err
	}
	res, err := runScenarios(ctx, &Results{}, []scenario{langs, rig.scenario("lanes", "lanes/go", keepAsLanes)})
	if res == nil {
		t.Fatalf("no results with the error %v", err)
	}
	if err == nil || !strings.Contains(err.Error(), "lanes: interrupted before it started") || rig.runs["lanes/go"] != 0 {
		t.Fatalf("error %v, %d lanes runs; want the lanes scenario not started", err, rig.runs["lanes/go"])
	}
	if res.Languages["go"] == nil || res.Failure == nil || !res.Failure.Interrupted || res.Failure.Scenario != "lanes" {
		t.Errorf("languages %v, failure %+v; want the languages scenario kept and lanes interrupted", res.Languages, res.Failure)
	}
}

// TestFirstScenarioFailsNoResults: when the first scenario fails nothing completed, and
// there are no results to write, only the error.
func TestFirstScenarioFailsNoResults(t *testing.T) {
	rig := newScenarioRig(t, context.Background())
	rig.fail = func(key string, run int) error {
		if key == "lanes/go" {
			return errors.New("not ready")
		}
		return nil
	}
	res, err := runScenarios(context.Background(), &Results{}, []scenario{
		rig.scenario("lanes", "lanes/go", keepAsLanes),
		rig.scenario("fork", "fork/python", keepAsFront),
	})
	if res != nil || err == nil || err.Error() != "lanes: lanes/go: not ready" || rig.runs["fork/python"] != 0 {
		t.Errorf("results %+v, error %v, %d fork runs; want no results, the lanes scenario's error, no fork run", res, err, rig.runs["fork/python"])
	}
}
