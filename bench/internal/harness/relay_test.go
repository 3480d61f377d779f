package harness

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// benchCFlags are the Makefile's BENCH_CFLAGS, with warnings made errors here.
var benchCFlags = []string{"-O2", "-Wall", "-Wextra", "-Werror"}

// repoRoot is the repository root, from this package's directory.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("../../..")
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// buildC compiles the relay and the C child into a temporary directory and returns their
// paths; it skips the test when there is no C compiler.
func buildC(t *testing.T) (relay, child string) {
	t.Helper()
	cc := os.Getenv("CC")
	if cc == "" {
		cc = "cc"
	}
	if _, err := exec.LookPath(cc); err != nil {
		t.Skipf("no C compiler (%s) on PATH: the relay and the C child cannot be built (Debian: apt-get install gcc)", cc)
	}
	dir := t.TempDir()
	src := filepath.Join(repoRoot(t), "bench/functions/c")
	for _, name := range []string{"relay", "child"} {
		args := append(append([]string{}, benchCFlags...), "-o", filepath.Join(dir, "c-"+name), filepath.Join(src, name+".c"))
		if out, err := exec.Command(cc, args...).CombinedOutput(); err != nil {
			t.Fatalf("%s %s: %v\n%s", cc, strings.Join(args, " "), err, out)
		}
	}
	return filepath.Join(dir, "c-relay"), filepath.Join(dir, "c-child")
}

func start(t *testing.T, name, program string, argv []string, pool bool) *server {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := startServer(ctx, name, program, repoRoot(t), "", argv, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.stop)
	if pool {
		if err := s.waitReady(ctx); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// exchange writes raw request bytes on conn and reads n responses, returning their bodies.
func exchange(t *testing.T, conn net.Conn, br *bufio.Reader, raw string, n int) []string {
	t.Helper()
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(conn, raw); err != nil {
		t.Fatal(err)
	}
	var bodies []string
	for i := 0; i < n; i++ {
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("response %d to %q: %v", i+1, raw, err)
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("response %d to %q: status %d, %v", i+1, raw, resp.StatusCode, err)
		}
		bodies = append(bodies, string(b))
	}
	return bodies
}

// TestRelayServesHelloAndEcho: the relay and the C child build and answer the benchmark's two
// workloads, on kept-alive connections, pipelined, and on several connections at once.
func TestRelayServesHelloAndEcho(t *testing.T) {
	relay, child := buildC(t)
	s := start(t, "relay", "c-relay", []string{relay, "-addr", "127.0.0.1:0", "--", child}, false)
	if err := verify(s); err != nil {
		t.Fatalf("%v\n%s", err, s.log.String())
	}

	conn, err := net.Dial("tcp", s.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	br := bufio.NewReader(conn)
	hello := "GET / HTTP/1.1\r\nHost: bench\r\n\r\n"
	echo := "POST /x HTTP/1.1\r\nHost: bench\r\nContent-Length: 5\r\n\r\nabcde"
	for i := 0; i < 3; i++ { // kept alive
		if got := exchange(t, conn, br, hello, 1); got[0] != "Hello, world!\n" {
			t.Errorf("GET / = %q; want the greeting", got[0])
		}
	}
	// Pipelined: the second request waits at the relay until the first is answered.
	got := exchange(t, conn, br, echo+hello+echo, 3)
	if want := []string{"abcde", "Hello, world!\n", "abcde"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("pipelined = %q; want %q", got, want)
	}

	// Eight connections at once queue for the one child.
	body := strings.Repeat("abcdefghijklmnop", 64)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < 3; j++ {
				resp, err := http.Post(s.url(), "application/octet-stream", strings.NewReader(body))
				if err != nil {
					errs <- err
					return
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if string(b) != body {
					errs <- fmt.Errorf("echo of 1 KiB came back as %d bytes", len(b))
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("%v\n%s", err, s.log.String())
	}
}

// TestCChildAnswersTheHandshakeAndEchoesTheToken: the C child speaks the protocol a watchdog
// expects, byte for byte (PROTOCOL.md §3.2, §4.6).
func TestCChildAnswersTheHandshakeAndEchoesTheToken(t *testing.T) {
	_, child := buildC(t)
	got, _, err, stderr := runCChild(t, child, nil, handshake+
		"GET / HTTP/1.1\r\nHost: x\r\nAfterBurn-Exchange: a1\r\nContent-Length: 0\r\n\r\n"+
		"POST / HTTP/1.1\r\nHost: x\r\nafterburn-exchange: Zz9\r\nContent-Length: 3\r\n\r\nabc"+
		"OPTIONS * HTTP/1.1\r\nHost: afterburn\r\nAfterBurn-Handshake: 1\r\nAfterBurn-Exchange: b2\r\nContent-Length: 0\r\n\r\n"+
		"GET / HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n")
	if err != nil { // the end of the request pipe between requests: the child exits 0 (§9.4)
		t.Errorf("c-child exited with %v; want 0 at the end of the request pipe\n%s", err, stderr)
	}
	want := "HTTP/1.1 200 OK\r\nAfterBurn-Protocol: 1\r\nAfterBurn-Library: c-child/0\r\nAfterBurn-Capabilities: exchange\r\nContent-Length: 0\r\n\r\n" +
		"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nAfterBurn-Exchange: a1\r\nContent-Length: 14\r\n\r\nHello, world!\n" +
		"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nAfterBurn-Exchange: Zz9\r\nContent-Length: 3\r\n\r\nabc" +
		"HTTP/1.1 200 OK\r\nAfterBurn-Protocol: 1\r\nAfterBurn-Library: c-child/0\r\nAfterBurn-Capabilities: exchange\r\nAfterBurn-Exchange: b2\r\nContent-Length: 0\r\n\r\n" +
		"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 14\r\n\r\nHello, world!\n"
	if string(got) != want {
		t.Errorf("c-child wrote\n%q\nwant\n%q\nstderr: %s", got, want, stderr)
	}
}

// TestWatchdogDrivesTheCChild: the real watchdog passes the C child's handshake and serves
// both workloads through it, exchange tokens included, with its front (the default) and with
// -front off (net/http only), the hop's two watchdog configurations.
func TestWatchdogDrivesTheCChild(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the watchdog")
	}
	_, child := buildC(t)
	watchdog := filepath.Join(t.TempDir(), "afterburn-watchdog")
	build := exec.Command("go", "build", "-o", watchdog, "./cmd/afterburn-watchdog")
	build.Dir = filepath.Join(repoRoot(t), "go")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the watchdog: %v\n%s", err, out)
	}
	argv := []string{watchdog, "-port", "0", "-metrics_port", "0", "-listen_host", "127.0.0.1", "-workers", "2", "--", child}
	for _, c := range []struct {
		key  Mode
		argv []string
	}{{WatchdogC, argv}, {WatchdogCNetHTTP, netHTTPOnly(argv)}} {
		t.Run(string(c.key), func(t *testing.T) {
			s := start(t, string(c.key), "afterburn-watchdog", c.argv, true)
			for i := 0; i < 3; i++ {
				if err := verify(s); err != nil {
					t.Fatalf("%v\n%s", err, s.log.String())
				}
			}
			if log := s.log.String(); strings.Contains(log, "bad_response") || strings.Contains(log, "status=502") {
				t.Errorf("the watchdog refused a response of the C child:\n%s", log)
			}
		})
	}
}

// TestHopConfigsMeasureTheWatchdogWithAndWithoutItsFront: every run measures the relay, the
// watchdog in front of the C child, and the same watchdog command line with -front off (before
// the "--" that starts the worker), in that order.
func TestHopConfigsMeasureTheWatchdogWithAndWithoutItsFront(t *testing.T) {
	root := t.TempDir()
	for _, f := range []string{cRelayBin, cChildBin} {
		os.MkdirAll(filepath.Join(root, filepath.Dir(f)), 0o755)
		os.WriteFile(filepath.Join(root, f), nil, 0o755)
	}
	watchdog := func(child []string) []string {
		return append([]string{"go/bin/afterburn-watchdog", "-port", "0", "-workers", "2", "--"}, child...)
	}
	configs, err := hopConfigs(root, watchdog)
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	byKey := map[string]*config{}
	for _, c := range configs {
		keys = append(keys, c.key)
		byKey[c.key] = c
	}
	if want := []string{"relay", "watchdog-c", "watchdog-c-net-http"}; fmt.Sprint(keys) != fmt.Sprint(want) {
		t.Fatalf("hop configurations %v; want %v", keys, want)
	}
	on, off := byKey["watchdog-c"], byKey["watchdog-c-net-http"]
	if want := "go/bin/afterburn-watchdog -port 0 -workers 2 -- " + cChildBin; strings.Join(on.argv, " ") != want {
		t.Errorf("watchdog-c = %q; want %q (the front on: no -front flag)", strings.Join(on.argv, " "), want)
	}
	if want := "go/bin/afterburn-watchdog -port 0 -workers 2 -front off -- " + cChildBin; strings.Join(off.argv, " ") != want {
		t.Errorf("watchdog-c-net-http = %q; want %q", strings.Join(off.argv, " "), want)
	}
	if !off.pool || off.program != "afterburn-watchdog" {
		t.Errorf("watchdog-c-net-http: pool %v program %q; want a watchdog waited for like watchdog-c", off.pool, off.program)
	}
	if got := netHTTPOnly([]string{"w", "-port", "0"}); strings.Join(got, " ") != "w -port 0 -front off" {
		t.Errorf("netHTTPOnly without a worker = %q; want the flag last", got)
	}
	if _, err := hopConfigs(t.TempDir(), watchdog); err == nil {
		t.Error("hopConfigs without the C programs built: no error; want one")
	}
}

// TestHopRatiosAndTargets: the hop pairs every configuration with the relay by repetition,
// the watchdog with its front with the net/http-only one, and applies issue 29's goals (0.9 at
// c=1, 0.6 at c=8, every workload) to the watchdog with its front, and to nothing else.
func TestHopRatiosAndTargets(t *testing.T) {
	byKey := map[string]ByWorkload{
		"relay": {
			Hello:  {"c1": figs(60, 100, 1000, 2000, 1000), "c8": figs(60, 100, 4000, 4000, 4000)},
			Echo1K: {"c1": figs(60, 100, 1000, 1000, 1000), "c8": figs(60, 100, 2000, 2000, 2000)},
		},
		"watchdog-c": {
			Hello:  {"c1": figs(70, 100, 880, 1760, 880), "c8": figs(70, 100, 2400, 2400, 2400)}, // 0.88, 0.6
			Echo1K: {"c1": figs(70, 100, 900, 950, 900), "c8": figs(70, 100, 1100, 1100, 1100)},  // 0.9, 0.55
		},
		"watchdog-c-net-http": {
			Hello:  {"c1": figs(70, 100, 800, 1600, 400), "c8": figs(70, 100, 1200, 1600, 2000)}, // 0.8, 0.4
			Echo1K: {"c1": figs(70, 100, 700, 700, 700)},
		},
		"limit":   {Hello: {"c1": figs(70, 100, 500, 1000, 500)}},
		"ceiling": {},
	}
	h := newHop(byKey)
	if s, ok := h.FindRatio(WatchdogC, Hello, "c1"); !ok || s != (Spread{Median: 0.88, Min: 0.88, Max: 0.88, N: 3}) {
		t.Errorf("watchdog + C child ÷ relay at c1 = %+v, %v; want 0.88 in every repetition", s, ok)
	}
	if s, ok := h.FindRatio(WatchdogCNetHTTP, Hello, "c8"); !ok || s != (Spread{Median: 0.4, Min: 0.3, Max: 0.5, N: 3}) {
		t.Errorf("net/http-only watchdog ÷ relay at c8 = %+v, %v; want median 0.4 of 0.3, 0.4, 0.5", s, ok)
	}
	if s, ok := h.FindRatio(Limit, Hello, "c1"); !ok || s.Median != 0.5 {
		t.Errorf("limit ÷ relay = %+v, %v; want 0.5", s, ok)
	}
	if _, ok := h.FindRatio(Ceiling, Hello, "c1"); ok {
		t.Errorf("a ratio for the ceiling, which did not run")
	}
	// The front's saving: the watchdog with its front over the net/http-only one, per repetition.
	if s, ok := h.FrontRatio(Hello, "c1"); !ok || s != (Spread{Median: 1.1, Min: 1.1, Max: 2.2, N: 3}) {
		t.Errorf("front ÷ net/http only at hello c1 = %+v, %v; want median 1.1 of 1.1, 1.1, 2.2", s, ok)
	}
	if s, ok := h.FrontRatio(Hello, "c8"); !ok || s.Median != 1.5 || s.Min != 1.2 || s.Max != 2 {
		t.Errorf("front ÷ net/http only at hello c8 = %+v, %v; want median 1.5 of 2, 1.5, 1.2", s, ok)
	}
	if _, ok := h.FrontRatio(Echo1K, "c8"); ok {
		t.Errorf("a front ratio for echo1k c8, where the net/http-only watchdog did not run")
	}
	for _, r := range h.FrontRatios {
		if r.Of != WatchdogC || r.Baseline != WatchdogCNetHTTP {
			t.Errorf("front ratio %+v; want watchdog-c over watchdog-c-net-http", r)
		}
	}
	for _, r := range h.Ratios {
		if r.Baseline != Relay {
			t.Errorf("hop ratio %+v; want every one over the relay", r)
		}
	}
	met := map[string]bool{}
	for _, tg := range h.Targets {
		met[tg.Name+" "+tg.Goal] = tg.Met
	}
	want := map[string]bool{
		"hello c1 watchdog + C child ÷ relay >= 0.9":  false, // 0.88: met under issue 18's 0.85, not issue 29's 0.9
		"hello c8 watchdog + C child ÷ relay >= 0.6":  true,  // 0.6 >= 0.6
		"echo1k c1 watchdog + C child ÷ relay >= 0.9": true,  // 0.9 >= 0.9
		"echo1k c8 watchdog + C child ÷ relay >= 0.6": false, // 0.55: met under issue 18's 0.5, not 0.6
	}
	if fmt.Sprint(met) != fmt.Sprint(want) {
		t.Errorf("hop targets met = %v; want %v (issue 29's goals on the watchdog with its front only)", met, want)
	}
	if newHop(map[string]ByWorkload{}) != nil {
		t.Errorf("a hop without the relay; want nil")
	}
}

// TestHopJSONWithoutTheNetHTTPWatchdog: a hop without the net/http-only watchdog (a run from
// before the front) writes neither of its fields, and reads back as it was; one with it round
// trips.
func TestHopJSONWithoutTheNetHTTPWatchdog(t *testing.T) {
	old := newHop(map[string]ByWorkload{
		"relay":      {Hello: {"c1": figs(60, 100, 1000)}},
		"watchdog-c": {Hello: {"c1": figs(60, 100, 900)}},
	})
	b, err := json.Marshal(old)
	if err != nil {
		t.Fatal(err)
	}
	for _, field := range []string{"watchdog_c_child_net_http", "front_over_net_http"} {
		if strings.Contains(string(b), field) {
			t.Errorf("JSON of a hop without the net/http-only watchdog has %s:\n%s", field, b)
		}
	}
	var back Hop
	if err := json.Unmarshal(b, &back); err != nil || back.WatchdogCNetHTTP != nil || len(back.Targets) != 1 {
		t.Errorf("read back: %+v, %v; want no net/http-only figures and the one target", back, err)
	}
	full := newHop(map[string]ByWorkload{
		"relay":               {Hello: {"c1": figs(60, 100, 1000)}},
		"watchdog-c":          {Hello: {"c1": figs(60, 100, 900)}},
		"watchdog-c-net-http": {Hello: {"c1": figs(60, 100, 600)}},
	})
	if b, err = json.Marshal(full); err != nil {
		t.Fatal(err)
	}
	back = Hop{}
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if s, ok := back.FrontRatio(Hello, "c1"); !ok || s.Median != 1.5 || back.WatchdogCNetHTTP[Hello]["c1"].RPS.Median != 600 {
		t.Errorf("read back: front ratio %+v, %v, net/http-only %+v; want 1.5 and 600", s, ok, back.WatchdogCNetHTTP)
	}
}

// withCPU builds figures whose runs carry a tree CPU per request.
func withCPU(us ...float64) *Figures {
	f := &Figures{}
	for _, u := range us {
		f.add(LoadResult{RPS: 1000, P50us: 1, P99us: 2, Requests: 1000, Host: &HostCost{Requests: 1000, Tree: PerRequest{CPUus: u}}})
	}
	return f
}

// TestLibraryCPUIsAboveTheCChildPerRepetition: the library's own CPU per request is the
// language's tree less the C child's, paired by repetition.
func TestLibraryCPUIsAboveTheCChildPerRepetition(t *testing.T) {
	l := &LanguageResults{
		AfterBurn: ByWorkload{Hello: {"c1": withCPU(80, 100, 90)}, Echo1K: {"c1": withCPU(1)}},
		WatchdogC: ByWorkload{Hello: {"c1": withCPU(50, 60, 70)}},
	}
	got := libraryCPU(l)
	if len(got) != 1 {
		t.Fatalf("libraryCPU = %+v; want hello c1 only (echo1k has no C child figures)", got)
	}
	if want := (Spread{Median: 30, Min: 20, Max: 40, N: 3}); got[0].AboveUs != want {
		t.Errorf("above the C child = %+v; want %+v (30, 40, 20)", got[0].AboveUs, want)
	}
	if got[0].CChildUs.Median != 60 || got[0].AfterBurnUs.Median != 90 {
		t.Errorf("C child %v, AfterBurn %v; want medians 60 and 90", got[0].CChildUs, got[0].AfterBurnUs)
	}
}

// TestLibraryCPUGoalsPerConfiguration: every AfterBurn configuration gets its row, and the
// c=8 hello row is held to issue 30's goal: the language's for the plain handler, a variant's
// own where it states one (Python's ASGI adapter 40 µs), none for a variant without.
func TestLibraryCPUGoalsPerConfiguration(t *testing.T) {
	l := &LanguageResults{
		AfterBurn: ByWorkload{Hello: {"c8": withCPU(45, 40, 50)}},
		WatchdogC: ByWorkload{Hello: {"c8": withCPU(15, 15, 15)}},
		Variants: []*VariantResults{
			{Key: "asgi", Label: "asgi adapter", CPUGoal: 40, Figures: ByWorkload{Hello: {"c8": withCPU(60, 50, 55)}}},
			{Key: "wsgi", Label: "wsgi adapter", Figures: ByWorkload{Hello: {"c8": withCPU(99, 99, 99)}}},
		},
	}
	l.LibraryCPU = libraryCPU(l)
	var ofs []string
	for _, x := range l.LibraryCPU {
		ofs = append(ofs, x.Of)
	}
	if want := []string{OfAfterBurn, OfAfterBurn + "-asgi", OfAfterBurn + "-wsgi"}; !slices.Equal(ofs, want) {
		t.Fatalf("library CPU rows of %v; want %v", ofs, want)
	}
	got := map[string]Target{}
	for _, tg := range targets("python", l) {
		got[tg.Name] = tg
	}
	for name, want := range map[string]Target{
		"hello c8 CPU µs per request above the C child":              {Value: 30, Goal: "<= 30", Met: true},
		"asgi adapter hello c8 CPU µs per request above the C child": {Value: 40, Goal: "<= 40", Met: true},
	} {
		tg, ok := got[name]
		if !ok || tg.Value != want.Value || tg.Goal != want.Goal || tg.Met != want.Met {
			t.Errorf("target %q = %+v, %v; want %+v", name, tg, ok, want)
		}
	}
	if _, ok := got["wsgi adapter hello c8 CPU µs per request above the C child"]; ok {
		t.Errorf("a CPU goal for the WSGI adapter, which states none: %v", got)
	}
	l.Variants[0].Figures[Hello]["c8"] = withCPU(60, 56, 57)
	l.LibraryCPU = libraryCPU(l)
	for _, tg := range targets("python", l) {
		if tg.Name == "asgi adapter hello c8 CPU µs per request above the C child" && (tg.Met || tg.Value != 42) {
			t.Errorf("ASGI at 42 µs above the C child: %+v; want not met", tg)
		}
	}
}

// TestCChildBusy: C_CHILD_BUSY_NS makes the C child keep its CPU for that long before each
// answer but the handshake's, answering the same bytes (the front scenario's slower C
// child); a value that is not a count of nanoseconds stops it with status 2.
func TestCChildBusy(t *testing.T) {
	_, child := buildC(t)
	run := func(busy, requests string) ([]byte, time.Duration, error, string) {
		return runCChild(t, child, []string{"C_CHILD_BUSY_NS=" + busy}, requests)
	}
	const busy = 30 * time.Millisecond
	requests := handshake + "GET / HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n" +
		"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc"
	got, took, err, stderr := run(fmt.Sprint(busy.Nanoseconds()), requests)
	if err != nil {
		t.Fatalf("c-child exited with %v\n%s", err, stderr)
	}
	want := "HTTP/1.1 200 OK\r\nAfterBurn-Protocol: 1\r\nAfterBurn-Library: c-child/0\r\nAfterBurn-Capabilities: exchange\r\nContent-Length: 0\r\n\r\n" +
		"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 14\r\n\r\nHello, world!\n" +
		"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 3\r\n\r\nabc"
	if string(got) != want {
		t.Errorf("c-child wrote\n%q\nwant\n%q", got, want)
	}
	if took < 2*busy {
		t.Errorf("two answers took %v with C_CHILD_BUSY_NS of %v each; want at least %v", took, busy, 2*busy)
	}
	for _, bad := range []string{"", "x", "-1", "10us"} {
		_, _, err, stderr := run(bad, requests)
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 2 || !strings.Contains(stderr, "bad C_CHILD_BUSY_NS") {
			t.Errorf("C_CHILD_BUSY_NS=%q: %v, %q; want exit status 2 naming the variable", bad, err, stderr)
		}
	}
}

// runCChild runs the C child on a pair of pipes with env added to its environment, writes
// requests and closes the request pipe, and returns all it answered, how long from the
// first write to the end of the response pipe, how it exited, and its stderr.
func runCChild(t *testing.T, child string, env []string, requests string) ([]byte, time.Duration, error, string) {
	t.Helper()
	reqR, reqW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	respR, respW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer respR.Close()
	var stderr bytes.Buffer
	cmd := exec.Command(child)
	cmd.Env = append(append(os.Environ(), "AFTERBURN_FDS=3,4"), env...)
	cmd.ExtraFiles = []*os.File{reqR, respW}
	cmd.Stderr = &stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	reqR.Close()
	respW.Close()
	began := time.Now()
	go func() {
		reqW.Write([]byte(requests))
		reqW.Close()
	}()
	got, _ := io.ReadAll(respR)
	err = cmd.Wait()
	return got, time.Since(began), err, stderr.String()
}
