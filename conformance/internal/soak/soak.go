// Package soak runs a long mixed load through the watchdog and one language's fixture, with a
// low rate of crashes, timeouts, garbage and exceptions by design, and checks that every
// response belongs to the request it answers (issue 8: "responses delivered to the wrong
// request must be 0") and that the watchdog's memory and descriptors stay flat.
package soak

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/afterburn-dev/afterburn/conformance/internal/e2e"
)

// Config is one soak run.
type Config struct {
	Watchdog    string // the watchdog binary
	Function    string // the fixture command (run with /bin/sh -c "exec ...")
	Requests    int
	Concurrency int
	Workers     int
	FaultRate   float64 // share of requests that fail by design
	ExecTimeout time.Duration
	// Lanes is the watchdog's lanes setting (§2.5), "" for its default. The
	// soak's accounting knows one exchange per worker: with several lanes a
	// fault's worker fails its other lanes' exchanges too, by design.
	Lanes string
	// RSSSlackMiB is RSS growth always allowed, on top of the 10 %: a short run ends
	// before the Go heap of the watchdog has settled (make test's 6,000 requests).
	RSSSlackMiB float64
	Seed        uint64
	Log         io.Writer // progress lines; nil for none
	// SlowClients runs that many clients trickling a body at 1 KB/s and as
	// many never reading a 50 MB response beside the measured part of the
	// load (slowclients.go). With FaultRate 0, any worker restart fails the
	// run: slow clients must not cost a worker.
	SlowClients int
}

// Report is what a soak measured.
type Report struct {
	Requests       int64
	FailedByDesign int64 // faults answered as the spec says
	Misdelivered   int64 // responses carrying another request's id or content
	Unexpected     int64 // responses of the right request but the wrong status or content
	// Collateral counts requests with a body answered 502 worker_crashed: a
	// worker that exits right after a complete response may already hold the
	// next request, and one with a body it started to take in cannot be sent
	// elsewhere (PROTOCOL.md §9.3). At most one per such exit is allowed.
	Collateral     int64
	ExitsAfterResp int64 // crash-after-response faults sent
	// LateWrites counts late-writer faults sent (PROTOCOL.md §4.6). Each may
	// fail the request its worker serves when the stale bytes arrive: 502
	// bad_response when they precede its head, an aborted body when they
	// land inside a streamed one (§8.7). Those count as Collateral, at most
	// one per late write; a stale response delivered is Misdelivered.
	LateWrites int64
	// TimedOut counts requests answered 504 timeout with their own id: exec_timeout counts
	// time in the queue (PROTOCOL.md §5.2), and faults that hold workers can make the queue
	// that long. Allowed up to maxTimedOutShare of the requests.
	TimedOut    int64
	Problems    []string
	RSSStartMiB float64 // after warm-up, with every worker idle
	RSSEndMiB   float64
	FDsStart    int
	FDsEnd      int
	FDsEndList  []string // descriptors opened or closed since warm-up, when their count changed
	// GoroutinesStart and GoroutinesEnd are the watchdog's go_goroutines, idle, after warm-up
	// and at the end: unlike RSS they do not move with the Go heap's growth and collection, so a
	// short run catches a goroutine left behind per request or per worker replaced.
	GoroutinesStart float64
	GoroutinesEnd   float64
	// GoroutineDump is the watchdog's goroutines at the end, as SIGQUIT has
	// the runtime print them, when their count grew past maxGoroutineGrowth:
	// so that a failure says which ones stayed.
	GoroutineDump string
	Restarts      float64
	Elapsed       time.Duration
	RSSSlackMiB   float64 // from Config: growth always allowed on top of 10 %
	// MeasuredRate is requests per second after warm-up, slow clients running.
	MeasuredRate float64
	// SlowClients and SlowClientRestarts: workers replaced while slow
	// clients ran with no fault by design, which must be none.
	SlowClients        int
	SlowClientRestarts float64
}

// maxTimedOutShare bounds the requests that may time out waiting behind faults.
const maxTimedOutShare = 0.005

// maxRSSGrowth is how much the watchdog's resident set may grow after warm-up (issue 8).
const maxRSSGrowth = 1.10

// maxGoroutineGrowth is how many more goroutines the idle watchdog may have at the end than after
// warm-up: a connection's goroutine may still be ending when the count is taken.
const maxGoroutineGrowth = 2

// Line is the closing line of issue 8.
func (r *Report) Line() string {
	return fmt.Sprintf("soak: %d requests, %d misdelivered, rss %.1f->%.1f MiB, fds %d->%d, goroutines %.0f->%.0f, restarts %.0f",
		r.Requests, r.Misdelivered, r.RSSStartMiB, r.RSSEndMiB, r.FDsStart, r.FDsEnd, r.GoroutinesStart, r.GoroutinesEnd, r.Restarts)
}

// Err says why the soak failed, or nil.
func (r *Report) Err() error {
	var why []string
	if r.Misdelivered > 0 {
		why = append(why, fmt.Sprintf("%d responses delivered to the wrong request", r.Misdelivered))
	}
	if r.Unexpected > 0 {
		why = append(why, fmt.Sprintf("%d unexpected responses", r.Unexpected))
	}
	if float64(r.TimedOut) > maxTimedOutShare*float64(r.Requests) {
		why = append(why, fmt.Sprintf("%d requests timed out, more than %.1f%%", r.TimedOut, maxTimedOutShare*100))
	}
	if r.Collateral > r.ExitsAfterResp+r.LateWrites {
		why = append(why, fmt.Sprintf("%d requests lost to worker exits and late writers, more than the %d exits after a response and %d late writes",
			r.Collateral, r.ExitsAfterResp, r.LateWrites))
	}
	if r.RSSEndMiB > r.RSSStartMiB*maxRSSGrowth+r.RSSSlackMiB {
		why = append(why, fmt.Sprintf("watchdog RSS grew %.1f -> %.1f MiB (more than %.0f%% and %.1f MiB)",
			r.RSSStartMiB, r.RSSEndMiB, (maxRSSGrowth-1)*100, r.RSSSlackMiB))
	}
	if r.GoroutinesEnd > r.GoroutinesStart+maxGoroutineGrowth {
		why = append(why, fmt.Sprintf("watchdog goroutines grew %.0f -> %.0f, idle", r.GoroutinesStart, r.GoroutinesEnd))
	}
	if r.SlowClientRestarts > 0 {
		why = append(why, fmt.Sprintf("%.0f workers replaced while %d slow clients ran with no fault by design", r.SlowClientRestarts, r.SlowClients))
	}
	if r.FDsEnd != r.FDsStart {
		why = append(why, fmt.Sprintf("watchdog open descriptors %d -> %d (%s)", r.FDsStart, r.FDsEnd, strings.Join(r.FDsEndList, " ")))
	}
	if len(why) == 0 {
		return nil
	}
	return fmt.Errorf("soak failed: %s", strings.Join(why, "; "))
}

// Run starts the watchdog, drives it and measures it.
func Run(ctx context.Context, c Config) (*Report, error) {
	flags := []string{"-workers", strconv.Itoa(c.Workers), "-exec_timeout", c.ExecTimeout.String()}
	if c.Lanes != "" {
		flags = append(flags, "-lanes", c.Lanes)
	}
	wd, err := e2e.StartWatchdog(ctx, c.Watchdog, c.Function, flags, nil)
	if err != nil {
		return nil, err
	}
	defer wd.Stop()
	if err := wd.WaitReady(ctx, c.Workers); err != nil {
		return nil, fmt.Errorf("%v\n%s", err, wd.Tail())
	}
	transport := &http.Transport{MaxIdleConnsPerHost: c.Concurrency, DisableCompression: true}
	client := &http.Client{Transport: transport, Timeout: c.ExecTimeout + 30*time.Second}
	s := &soaker{cfg: c, wd: wd, client: client, kinds: mix(), rep: &Report{RSSSlackMiB: c.RSSSlackMiB}}
	for _, k := range s.kinds {
		if k.fault {
			s.faults = append(s.faults, k)
		} else {
			s.normal = append(s.normal, k)
			s.totalWeight += k.weight
		}
	}

	start := time.Now()
	// Warm-up: a tenth of the run, at least 5000 requests (but at most half), so that the
	// heap, buffers and connections have reached their working size before the baseline.
	warm := max(min(max(c.Requests/10, 5000), c.Requests/2), 1)
	s.drive(ctx, 0, warm)
	if s.rep.FDsStart, s.rep.RSSStartMiB, err = s.quiesce(ctx, transport, -1); err != nil {
		return nil, err
	}
	if s.rep.GoroutinesStart, err = s.idleGoroutines(-1); err != nil {
		return nil, err
	}
	s.logf("warm-up done: %d requests; watchdog rss %.1f MiB, %d fds, %.0f goroutines", warm, s.rep.RSSStartMiB, s.rep.FDsStart, s.rep.GoroutinesStart)
	startFDs := fdTargets(wd.Pid())
	restartsBefore, err := restartCount(wd)
	if err != nil {
		return nil, err
	}
	measured := time.Now()
	stopSlow := func() {}
	if c.SlowClients > 0 {
		stopSlow = s.slowClients(ctx, c.SlowClients)
		s.rep.RSSSlackMiB += float64(c.SlowClients) * slowClientMemory
	}
	s.drive(ctx, warm, c.Requests)
	s.rep.MeasuredRate = float64(c.Requests-warm) / time.Since(measured).Seconds()
	stopSlow()
	if s.rep.FDsEnd, s.rep.RSSEndMiB, err = s.quiesce(ctx, transport, s.rep.FDsStart); err != nil {
		return nil, err
	}
	if s.rep.GoroutinesEnd, err = s.idleGoroutines(s.rep.GoroutinesStart); err != nil {
		return nil, err
	}
	if s.rep.FDsEnd != s.rep.FDsStart {
		s.rep.FDsEndList = changed(startFDs, fdTargets(wd.Pid()))
	}
	s.rep.Elapsed = time.Since(start)
	s.rep.Requests = s.sent.Load()
	m, err := metrics(wd)
	if err != nil {
		return nil, err
	}
	s.rep.Restarts = m.Sum("afterburn_worker_restarts_total")
	if c.SlowClients > 0 && c.FaultRate == 0 {
		s.rep.SlowClientRestarts = s.rep.Restarts - restartsBefore
		s.rep.SlowClients = c.SlowClients
	}
	if s.rep.GoroutinesEnd > s.rep.GoroutinesStart+maxGoroutineGrowth {
		s.rep.GoroutineDump = goroutineDump(ctx, wd) // last: it ends the watchdog
	}
	return s.rep, nil
}

// goroutineDump has the Go runtime print the watchdog's goroutines
// (SIGQUIT, which also ends it) and returns what it printed.
func goroutineDump(ctx context.Context, wd *e2e.Watchdog) string {
	from := wd.Log.Len()
	if err := wd.Signal(syscall.SIGQUIT); err != nil {
		return fmt.Sprintf("(no goroutine dump: %v)", err)
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	wd.Wait(ctx)
	return wd.Log.Since(from)
}

func restartCount(wd *e2e.Watchdog) (float64, error) {
	m, err := metrics(wd)
	if err != nil {
		return 0, err
	}
	return m.Sum("afterburn_worker_restarts_total"), nil
}

type soaker struct {
	cfg         Config
	wd          *e2e.Watchdog
	client      *http.Client
	kinds       []kind
	normal      []kind
	faults      []kind
	totalWeight int
	rep         *Report
	sent        atomic.Int64
	mu          sync.Mutex // guards rep's counters and Problems
}

func (s *soaker) logf(format string, args ...any) {
	if s.cfg.Log != nil {
		fmt.Fprintf(s.cfg.Log, format+"\n", args...)
	}
}

// drive sends requests from..to-1 over Concurrency connections.
func (s *soaker) drive(ctx context.Context, from, to int) {
	var next atomic.Int64
	next.Store(int64(from))
	var wg sync.WaitGroup
	for g := range s.cfg.Concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(s.cfg.Seed, uint64(g)+uint64(from)<<20))
			for ctx.Err() == nil {
				i := next.Add(1) - 1
				if i >= int64(to) {
					return
				}
				s.one(ctx, r, i)
				if n := s.sent.Add(1); n%50000 == 0 {
					s.logf("%d requests sent", n)
				}
			}
		}()
	}
	wg.Wait()
}

func (s *soaker) pick(r *rand.Rand) kind {
	if r.Float64() < s.cfg.FaultRate {
		return s.faults[r.IntN(len(s.faults))]
	}
	n := r.IntN(s.totalWeight)
	for _, k := range s.normal {
		if n < k.weight {
			return k
		}
		n -= k.weight
	}
	return s.normal[0]
}

// one sends request i and judges its response.
func (s *soaker) one(ctx context.Context, r *rand.Rand, i int64) {
	k := s.pick(r)
	switch {
	case k.name == "crash-after-response":
		s.mu.Lock()
		s.rep.ExitsAfterResp++
		s.mu.Unlock()
	case k.lateWriter:
		s.mu.Lock()
		s.rep.LateWrites++
		s.mu.Unlock()
	}
	id := fmt.Sprintf("soak-%d-%d", s.cfg.Seed, i)
	token := strconv.FormatUint(r.Uint64(), 36)
	method, path, body := k.build(r, id, token)
	req, _ := http.NewRequestWithContext(ctx, method, s.wd.URL(path), strings.NewReader(string(body)))
	req.Header.Set("X-Request-Id", id) // §5.1: the watchdog keeps a valid client id
	if body == nil {
		req.Body, req.ContentLength = nil, 0
	}
	resp, err := s.client.Do(req)
	if err != nil {
		s.problem(false, fmt.Sprintf("%s %s (%s): %v", method, path, id, err))
		return
	}
	got, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		if s.lateWriterCollateral() {
			return // §8.7: stale bytes inside a streamed body abort it
		}
		s.problem(false, fmt.Sprintf("%s %s (%s): reading the body: %v", method, path, id, err))
		return
	}
	verdict := ""
	if gotID := resp.Header.Get("AfterBurn-Request-Id"); gotID != id {
		verdict = fmt.Sprintf("misdelivered: AfterBurn-Request-Id %q; want %q", gotID, id)
	} else if strings.Contains(string(got), staleBody) && !strings.Contains(string(body), staleBody) {
		verdict = fmt.Sprintf("misdelivered: a late writer's response %q", trim(got))
	} else {
		verdict = k.check(resp, got, id, token, body)
	}
	switch {
	case verdict != "" && resp.StatusCode == 502 && resp.Header.Get("AfterBurn-Error") == "bad_response" &&
		!strings.HasPrefix(verdict, "misdelivered") && s.lateWriterCollateral():
		// §4.6: the stale response preceded this request's head.
	case verdict != "" && !k.fault && resp.StatusCode == 504 && resp.Header.Get("AfterBurn-Error") == "timeout":
		s.mu.Lock()
		s.rep.TimedOut++
		s.mu.Unlock()
	case verdict != "" && !k.fault && len(body) > 0 && resp.StatusCode == 502 &&
		resp.Header.Get("AfterBurn-Error") == "worker_crashed" && !strings.HasPrefix(verdict, "misdelivered"):
		s.mu.Lock()
		s.rep.Collateral++
		s.mu.Unlock()
	case verdict == "" && k.fault:
		s.mu.Lock()
		s.rep.FailedByDesign++
		s.mu.Unlock()
	case verdict == "":
	default:
		s.problem(strings.HasPrefix(verdict, "misdelivered"), fmt.Sprintf("%s %s (%s, %s): %s", method, path, id, k.name, verdict))
	}
}

// lateWriterCollateral counts one request failed by a late writer's stale
// bytes, when late writes were sent; it reports false when none were.
func (s *soaker) lateWriterCollateral() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.rep.LateWrites == 0 {
		return false
	}
	s.rep.Collateral++
	return true
}

func (s *soaker) problem(misdelivered bool, detail string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if misdelivered {
		s.rep.Misdelivered++
	} else {
		s.rep.Unexpected++
	}
	if len(s.rep.Problems) < 20 {
		s.rep.Problems = append(s.rep.Problems, detail)
	}
}

// quiesce waits until every worker is idle and the client's connections are closed, then
// reads the watchdog's open descriptors and resident set. With want >= 0 it waits (a
// while) for the descriptor count to come back to want, as closed connections and replaced
// workers' pipes are released.
func (s *soaker) quiesce(ctx context.Context, t *http.Transport, want int) (int, float64, error) {
	if err := s.wd.WaitReady(ctx, s.cfg.Workers); err != nil {
		return 0, 0, fmt.Errorf("%v\n%s", err, s.wd.Tail())
	}
	t.CloseIdleConnections()
	pid := s.wd.Pid()
	steadyFor := 0 // with a count to reach, wait for it
	if want < 0 {
		steadyFor = 20 // 200 ms
	}
	n, err := settle(func() (float64, error) { n, err := openFDs(pid); return float64(n), err },
		func(n float64) bool { return want >= 0 && int(n) == want }, steadyFor, 5*time.Second, 10*time.Millisecond)
	if err != nil {
		return 0, 0, err
	}
	rss, err := residentMiB(pid)
	return int(n), rss, err
}

// idleGoroutines reads the idle watchdog's go_goroutines until it is at most want (want < 0:
// until it holds for five scrapes), for at most two seconds: goroutines of connections just
// closed may still be ending. A count that holds but is above want is waited out all the
// same: it was such a count, taken while late responses still drained (§8.6), that failed
// soak-short-go once (33 -> 36).
func (s *soaker) idleGoroutines(want float64) (float64, error) {
	steadyFor := 0 // with a count to reach, wait for it
	if want < 0 {
		steadyFor = 5
	}
	return settle(func() (float64, error) {
		m, err := metrics(s.wd)
		if err != nil {
			return 0, err
		}
		return m.Sum("go_goroutines"), nil
	}, func(n float64) bool { return want >= 0 && n <= want }, steadyFor, 2*time.Second, 20*time.Millisecond)
}

// settle reads a value every interval until done says so, or it has not changed for
// steadyFor reads in a row (0: never enough), or limit has passed, and returns the last read.
func settle(read func() (float64, error), done func(float64) bool, steadyFor int, limit, interval time.Duration) (float64, error) {
	deadline := time.Now().Add(limit)
	last, same := -1.0, 0
	for {
		n, err := read()
		if err != nil {
			return 0, err
		}
		if n == last {
			same++
		} else {
			last, same = n, 0
		}
		if done(n) || (steadyFor > 0 && same >= steadyFor) || time.Now().After(deadline) {
			return n, nil
		}
		time.Sleep(interval)
	}
}

func openFDs(pid int) (int, error) {
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	return len(ents), err
}

// fdTargets lists where each open descriptor of pid leads, for a failure message.
func fdTargets(pid int) []string {
	ents, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	var out []string
	for _, e := range ents {
		t, _ := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, e.Name()))
		out = append(out, e.Name()+"="+t)
	}
	return out
}

// changed lists the descriptors in only one of before and after: "+fd=target"
// opened since, "-fd=target" closed.
func changed(before, after []string) []string {
	was := map[string]bool{}
	for _, d := range before {
		was[d] = true
	}
	is := map[string]bool{}
	var out []string
	for _, d := range after {
		is[d] = true
		if !was[d] {
			out = append(out, "+"+d)
		}
	}
	for _, d := range before {
		if !is[d] {
			out = append(out, "-"+d)
		}
	}
	return out
}

func residentMiB(pid int) (float64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
			return kb / 1024, err
		}
	}
	return 0, fmt.Errorf("/proc/%d/status has no VmRSS", pid)
}

// metricsClient keeps no connection open, so that a scrape in the middle of
// the run does not show as a descriptor the watchdog holds at its end.
var metricsClient = &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}

func metrics(wd *e2e.Watchdog) (*e2e.Metrics, error) {
	resp, err := metricsClient.Get(wd.MetricsURL())
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	return e2e.ParseMetrics(string(b))
}
