package harness

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
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
	reqR, reqW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	respR, respW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd := exec.Command(child)
	cmd.Env = append(os.Environ(), "AFTERBURN_FDS=3,4")
	cmd.ExtraFiles = []*os.File{reqR, respW}
	cmd.Stderr = &stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	reqR.Close()
	respW.Close()
	go func() {
		reqW.Write([]byte(handshake +
			"GET / HTTP/1.1\r\nHost: x\r\nAfterBurn-Exchange: a1\r\nContent-Length: 0\r\n\r\n" +
			"POST / HTTP/1.1\r\nHost: x\r\nafterburn-exchange: Zz9\r\nContent-Length: 3\r\n\r\nabc" +
			"OPTIONS * HTTP/1.1\r\nHost: afterburn\r\nAfterBurn-Handshake: 1\r\nAfterBurn-Exchange: b2\r\nContent-Length: 0\r\n\r\n" +
			"GET / HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n"))
		reqW.Close() // EOF between requests: the child exits 0 (§9.4)
	}()
	got, _ := io.ReadAll(respR)
	if err := cmd.Wait(); err != nil {
		t.Errorf("c-child exited with %v; want 0 at the end of the request pipe\n%s", err, stderr.String())
	}
	want := "HTTP/1.1 200 OK\r\nAfterBurn-Protocol: 1\r\nAfterBurn-Library: c-child/0\r\nAfterBurn-Capabilities: exchange\r\nContent-Length: 0\r\n\r\n" +
		"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nAfterBurn-Exchange: a1\r\nContent-Length: 14\r\n\r\nHello, world!\n" +
		"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nAfterBurn-Exchange: Zz9\r\nContent-Length: 3\r\n\r\nabc" +
		"HTTP/1.1 200 OK\r\nAfterBurn-Protocol: 1\r\nAfterBurn-Library: c-child/0\r\nAfterBurn-Capabilities: exchange\r\nAfterBurn-Exchange: b2\r\nContent-Length: 0\r\n\r\n" +
		"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 14\r\n\r\nHello, world!\n"
	if string(got) != want {
		t.Errorf("c-child wrote\n%q\nwant\n%q\nstderr: %s", got, want, stderr.String())
	}
}

// TestWatchdogDrivesTheCChild: the real watchdog passes the C child's handshake and serves
// both workloads through it, exchange tokens included.
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
	s := start(t, "watchdog-c", "afterburn-watchdog", []string{watchdog, "-port", "0", "-metrics_port", "0",
		"-listen_host", "127.0.0.1", "-workers", "2", "--", child}, true)
	for i := 0; i < 3; i++ {
		if err := verify(s); err != nil {
			t.Fatalf("%v\n%s", err, s.log.String())
		}
	}
	if log := s.log.String(); strings.Contains(log, "bad_response") || strings.Contains(log, "status=502") {
		t.Errorf("the watchdog refused a response of the C child:\n%s", log)
	}
}

// TestHopRatiosAndTargets: the hop pairs every configuration with the relay by repetition and
// applies issue 18's goals to the watchdog in front of the C child.
func TestHopRatiosAndTargets(t *testing.T) {
	byKey := map[string]ByWorkload{
		"relay":      {Hello: {"c1": figs(60, 100, 1000, 2000, 1000), "c8": figs(60, 100, 4000, 4000, 4000)}},
		"watchdog-c": {Hello: {"c1": figs(70, 100, 900, 1600, 800), "c8": figs(70, 100, 1600, 2400, 2000)}},
		"limit":      {Hello: {"c1": figs(70, 100, 500, 1000, 500)}},
		"ceiling":    {},
	}
	h := newHop(byKey)
	if s, ok := h.FindRatio(WatchdogC, Hello, "c1"); !ok || s != (Spread{Median: 0.8, Min: 0.8, Max: 0.9, N: 3}) {
		t.Errorf("watchdog + C child ÷ relay at c1 = %+v, %v; want median 0.8 of 0.9, 0.8, 0.8", s, ok)
	}
	if s, ok := h.FindRatio(Limit, Hello, "c1"); !ok || s.Median != 0.5 {
		t.Errorf("limit ÷ relay = %+v, %v; want 0.5", s, ok)
	}
	if _, ok := h.FindRatio(Ceiling, Hello, "c1"); ok {
		t.Errorf("a ratio for the ceiling, which did not run")
	}
	met := map[string]bool{}
	for _, tg := range h.Targets {
		met[tg.Name] = tg.Met
	}
	want := map[string]bool{
		"hello c1 watchdog + C child ÷ relay": false, // 0.8 < 0.85
		"hello c8 watchdog + C child ÷ relay": true,  // 0.5 >= 0.5
	}
	if fmt.Sprint(met) != fmt.Sprint(want) {
		t.Errorf("hop targets met = %v; want %v", met, want)
	}
	if newHop(map[string]ByWorkload{}) != nil {
		t.Errorf("a hop without the relay; want nil")
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
