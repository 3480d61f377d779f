package afterburn

// Tests of lanes (PROTOCOL.md §2.5) over real pipes: Serve runs in this process on K
// pairs of os.Pipe descriptors and a cancel pipe, named by AFTERBURN_FDS,
// AFTERBURN_STREAM_FDS and AFTERBURN_STREAM_CANCEL_FD as a watchdog started with
// -lanes K names them. Every step waits for the protocol's own bytes or for a
// handler's signal; the only clock is the overlap test's bound.

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// testBound is how long a test waits for something that should happen at once
// before it fails: a bound for a broken library, not a wait for readiness.
const testBound = 20 * time.Second

// waitFor receives from ch, or fails the test when nothing comes within testBound.
func waitFor[T any](t testing.TB, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(testBound):
		t.Fatalf("%s did not happen within %v", what, testBound)
		var zero T
		return zero
	}
}

// laneSet is Serve running on K lanes. Index i holds the watchdog's ends of lane i+1.
type laneSet struct {
	t         testing.TB
	req       []*os.File      // request pipes, write ends
	resp      []*bufio.Reader // response pipes, read ends
	respFiles []*os.File      // resp's pipes
	cancel    *os.File        // the cancel pipe, write end
	fds       []int           // the library's descriptors of lanes 2 to K, then of the cancel pipe
	started   bool            // serve was called
	done      chan struct{}   // closed when Serve returned
	err       error           // what Serve returned
}

// pipeFDs makes one lane: the library's descriptors (duplicates, so that the library
// holds the only copies of its ends) and the watchdog's ends.
func pipeFDs(t testing.TB) (in, out int, req, resp *os.File) {
	t.Helper()
	reqR, reqW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	respR, respW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	in, out = dupFD(t, reqR), dupFD(t, respW)
	reqR.Close()
	respW.Close()
	return in, out, reqW, respR
}

// startLanes runs Serve on k lanes given, as a watchdog started with -lanes k gives
// them.
func startLanes(t testing.TB, h http.Handler, k int, opts ...Option) *laneSet {
	t.Helper()
	ls := newLaneSet(t, k, false)
	ls.serve(h, opts...)
	return ls
}

// newLaneSet makes k lanes and a cancel pipe and names them in the environment: given
// (AFTERBURN_STREAM_FDS), or offered as under the watchdog's lanes=auto
// (AFTERBURN_STREAM_OFFER_FDS). serve starts Serve on them.
func newLaneSet(t testing.TB, k int, offered bool) *laneSet {
	t.Helper()
	ls := &laneSet{t: t, done: make(chan struct{})}
	var stream []string
	for i := range k {
		in, out, req, resp := pipeFDs(t)
		if i == 0 {
			t.Setenv("AFTERBURN_FDS", fmt.Sprintf("%d,%d", in, out))
		} else {
			stream = append(stream, fmt.Sprint(in), fmt.Sprint(out))
			ls.fds = append(ls.fds, in, out)
		}
		// A lane the library never answers fails the test instead of hanging it.
		resp.SetReadDeadline(time.Now().Add(testBound))
		ls.req = append(ls.req, req)
		ls.resp = append(ls.resp, bufio.NewReader(resp))
		ls.respFiles = append(ls.respFiles, resp)
	}
	cancelR, cancelW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cancelFD := dupFD(t, cancelR)
	cancelR.Close()
	ls.cancel = cancelW
	ls.fds = append(ls.fds, cancelFD)
	le := laneEnv{offered: offered}
	fdsVar, cancelVar := le.varNames()
	t.Setenv(fdsVar, strings.Join(stream, ","))
	t.Setenv(cancelVar, fmt.Sprint(cancelFD))
	t.Cleanup(func() {
		for _, f := range ls.req {
			f.Close()
		}
		ls.cancel.Close()
		if ls.started {
			select {
			case <-ls.done:
			case <-time.After(testBound):
				t.Errorf("Serve still running %v after every request pipe was closed", testBound)
			}
		}
		for _, f := range ls.respFiles {
			f.Close()
		}
	})
	return ls
}

// serve starts Serve on the lanes.
func (ls *laneSet) serve(h http.Handler, opts ...Option) {
	ls.started = true
	go func() {
		defer close(ls.done)
		ls.err = Serve(h, opts...)
	}()
}

func (ls *laneSet) write(lane int, s string) {
	ls.t.Helper()
	if _, err := io.WriteString(ls.req[lane-1], s); err != nil {
		ls.t.Fatalf("lane %d: %v", lane, err)
	}
}

func (ls *laneSet) response(lane int) (*http.Response, string) {
	ls.t.Helper()
	resp, err := http.ReadResponse(ls.resp[lane-1], nil)
	if err != nil {
		ls.t.Fatalf("lane %d: reading a response: %v", lane, err)
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		ls.t.Fatalf("lane %d: reading a response body: %v", lane, err)
	}
	return resp, string(body)
}

// expectEOF checks that the library closed the lane's response pipe with nothing
// more on it.
func (ls *laneSet) expectEOF(lane int) {
	ls.t.Helper()
	if rest, err := io.ReadAll(ls.resp[lane-1]); err != nil || len(rest) > 0 {
		ls.t.Fatalf("lane %d: got %q, %v; want EOF on the response pipe", lane, rest, err)
	}
}

// end closes every request pipe still open and returns what Serve returned.
func (ls *laneSet) end() error {
	for _, f := range ls.req {
		f.Close()
	}
	waitFor(ls.t, ls.done, "the end of Serve")
	return ls.err
}

func request(path, id, token string) string {
	return "GET " + path + " HTTP/1.1\r\nHost: fn\r\nAfterBurn-Request-Id: " + id +
		"\r\nAfterBurn-Exchange: " + token + "\r\n\r\n"
}

// TestLanesVectors runs every parse vector on lane 2 or 3 of three lanes, while the
// other lanes stay open, and reads the responses back as TestVectorsServe does. A
// vector that ends in a rejection must close its own lane only (§2.5, §8.8).
func TestLanesVectors(t *testing.T) {
	for i, v := range loadVectors(t, "parse") {
		t.Run(v.ID, func(t *testing.T) {
			for k, val := range baseEnv {
				t.Setenv(k, val)
			}
			for k, val := range v.Env {
				t.Setenv(k, val)
			}
			ls := startLanes(t, echoHandler, 3)
			lane := 2 + i%2
			go func() {
				for _, seg := range v.Request {
					if _, err := ls.req[lane-1].Write(seg); err != nil {
						break // the library closed a lane it rejected
					}
				}
				ls.req[lane-1].Close()
			}()
			rejected := checkVectorResponses(t, &v, ls.resp[lane-1], func() string { return fmt.Sprintf("lane %d", lane) })
			ls.expectEOF(lane)
			// The other lanes still serve.
			for other := 1; other <= 3; other++ {
				if other != lane {
					ls.write(other, request("/echo", "after", "a1"))
					if resp, body := ls.response(other); resp.StatusCode != 200 || !strings.Contains(body, `"request_id":"after"`) {
						t.Fatalf("lane %d after lane %d's vector: got %d %q", other, lane, resp.StatusCode, body)
					}
				}
			}
			err := ls.end()
			if rejected && err == nil {
				t.Fatalf("Serve returned nil after a rejection on lane %d; want the error", lane)
			}
			if !rejected && err != nil {
				t.Fatalf("Serve: %v; want nil", err)
			}
		})
	}
}

// TestLanesHandshake: the reply lists streams and exchange and says how many lanes
// the library serves; with MaxLanes below K the library closes lanes N+1 to K itself
// (§2.5), and lanes 1 to N serve. Lanes given are not an offer: PreferredLanes plays
// no part and the reply states no preference (§2.5 "Offered lanes").
func TestLanesHandshake(t *testing.T) {
	ls := startLanes(t, echoHandler, 4, MaxLanes(2), PreferredLanes(1))
	ls.write(1, handshake)
	resp, _ := ls.response(1)
	if got := resp.Header.Get("AfterBurn-Streams"); got != "2" {
		t.Errorf("AfterBurn-Streams: got %q; want 2", got)
	}
	if got := resp.Header.Values("AfterBurn-Streams-Preferred"); len(got) > 0 {
		t.Errorf("AfterBurn-Streams-Preferred: got %q; want no such field outside an offer", got)
	}
	if got := resp.Header.Get("AfterBurn-Capabilities"); got != "exchange, streams" {
		t.Errorf("AfterBurn-Capabilities: got %q; want exchange, streams", got)
	}
	ls.expectEOF(3)
	ls.expectEOF(4)
	for lane := 1; lane <= 2; lane++ {
		ls.write(lane, request("/echo", fmt.Sprint("r", lane), "t1"))
		if resp, _ := ls.response(lane); resp.StatusCode != 200 || resp.Header.Get("AfterBurn-Exchange") != "t1" {
			t.Fatalf("lane %d: got %d %v", lane, resp.StatusCode, resp.Header)
		}
	}
	if err := ls.end(); err != nil {
		t.Fatal(err)
	}
}

// TestLanesOverlap: four requests to a handler that sleeps 500 ms, one per lane, are
// served at once. A bound of 1500 ms is structural: one at a time takes 2000 ms.
func TestLanesOverlap(t *testing.T) {
	ls := startLanes(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(500 * time.Millisecond)
		io.WriteString(w, RequestID(r))
	}), 4)
	start := time.Now()
	for lane := 1; lane <= 4; lane++ {
		ls.write(lane, request("/sleep", fmt.Sprint("r", lane), fmt.Sprint("t", lane)))
	}
	for lane := 1; lane <= 4; lane++ {
		if _, body := ls.response(lane); body != fmt.Sprint("r", lane) {
			t.Fatalf("lane %d: got %q", lane, body)
		}
	}
	if d := time.Since(start); d >= 1500*time.Millisecond {
		t.Fatalf("four 500 ms requests on four lanes took %v; want < 1.5 s", d)
	}
	if err := ls.end(); err != nil {
		t.Fatal(err)
	}
}

// TestLanesFullResponsePipe: a response nobody reads fills lane 1's pipe and blocks
// its handler; lane 2 is served meanwhile (§2.5: back-pressure stays per lane).
func TestLanesFullResponsePipe(t *testing.T) {
	const size = 4 << 20 // far beyond a pipe's capacity
	writing := make(chan struct{})
	bigDone := make(chan struct{})
	ls := startLanes(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/large" {
			defer close(bigDone)
			close(writing)
			w.Write(bytes.Repeat([]byte{'x'}, size))
			return
		}
		io.WriteString(w, "small")
	}), 2)
	ls.write(1, request("/large", "big", "t1"))
	waitFor(t, writing, "lane 1's handler")
	ls.write(2, request("/small", "small", "t2"))
	if _, body := ls.response(2); body != "small" {
		t.Fatalf("lane 2: got %q", body)
	}
	select {
	case <-bigDone:
		t.Fatalf("lane 1's handler finished writing %d bytes nobody read", size)
	default:
	}
	if resp, body := ls.response(1); len(body) != size || resp.StatusCode != 200 {
		t.Fatalf("lane 1: got %d, %d bytes; want 200, %d", resp.StatusCode, len(body), size)
	}
	if err := ls.end(); err != nil {
		t.Fatal(err)
	}
}

// TestLanesCancel: a cancel line fires the cancellation of the exchange it names and
// of no other; unknown tokens and other lines are ignored; the cancelled exchange
// still ends with a response carrying its token, and the lane's next exchange starts
// with a live context (§2.5).
func TestLanesCancel(t *testing.T) {
	started := map[string]chan context.Context{"A": make(chan context.Context, 1), "B": make(chan context.Context, 1)}
	ls := startLanes(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := RequestID(r)
		if r.URL.Path == "/check" {
			fmt.Fprintf(w, "err=%v", r.Context().Err())
			return
		}
		started[id] <- r.Context()
		<-r.Context().Done()
		fmt.Fprintf(w, "%s cancelled: %v", id, r.Context().Err())
	}), 3)
	ls.write(2, request("/wait", "A", "tokA"))
	ls.write(3, request("/wait", "B", "tokB"))
	ctxA := waitFor(t, started["A"], "exchange A's handler")
	ctxB := waitFor(t, started["B"], "exchange B's handler")

	// Lines are read in order: once B is cancelled, the lines before it were seen.
	io.WriteString(ls.cancel, "cancel nope\nnot a cancel line\ncancel tokA \ncancel\ncancel tokB\n")
	waitFor(t, ctxB.Done(), "the cancellation of exchange B")
	if err := ctxA.Err(); err != nil {
		t.Fatalf("exchange A's context: %v after lines that do not name it; want nil", err)
	}
	resp, body := ls.response(3)
	if resp.Header.Get("AfterBurn-Exchange") != "tokB" || body != "B cancelled: context canceled" {
		t.Fatalf("lane 3: got %v %q", resp.Header, body)
	}

	io.WriteString(ls.cancel, "cancel tokA\n")
	resp, body = ls.response(2)
	if resp.Header.Get("AfterBurn-Exchange") != "tokA" || body != "A cancelled: context canceled" {
		t.Fatalf("lane 2: got %v %q", resp.Header, body)
	}
	// A late line for an exchange that ended reaches nothing, not the next one.
	io.WriteString(ls.cancel, "cancel tokA\n")
	for lane := 2; lane <= 3; lane++ {
		ls.write(lane, request("/check", "C", fmt.Sprint("tokC", lane)))
		if _, body := ls.response(lane); body != "err=<nil>" {
			t.Fatalf("lane %d after a cancelled exchange: got %q; want a live context", lane, body)
		}
	}
	if err := ls.end(); err != nil {
		t.Fatal(err)
	}
}

// TestLanesFramingError: a request lane 2 cannot parse is answered, lane 2 is closed,
// and lane 1 serves on (§2.5, §8.8). Serve reports the error once every lane ended.
func TestLanesFramingError(t *testing.T) {
	ls := startLanes(t, echoHandler, 2)
	ls.write(2, "POST /x HTTP/1.1\r\nHost: fn\r\nAfterBurn-Exchange: t2\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n")
	resp, body := ls.response(2)
	if resp.StatusCode != 400 || !strings.Contains(body, `"type":"bad_request"`) || resp.Header.Get("AfterBurn-Exchange") != "t2" {
		t.Fatalf("lane 2: got %d %v %q", resp.StatusCode, resp.Header, body)
	}
	ls.expectEOF(2)
	for i := range 3 {
		ls.write(1, request("/echo", fmt.Sprint("r", i), fmt.Sprint("t", i)))
		if resp, _ := ls.response(1); resp.StatusCode != 200 {
			t.Fatalf("lane 1 after lane 2's framing error: got %d", resp.StatusCode)
		}
	}
	select {
	case <-ls.done:
		t.Fatalf("Serve returned (%v) while lane 1 was open; want it to serve on", ls.err)
	default:
	}
	var perr *protocolError
	if err := ls.end(); !errors.As(err, &perr) || !strings.Contains(err.Error(), "chunk") {
		t.Fatalf("Serve: %v; want lane 2's framing error", err)
	}
}

// TestLanesPanicAfterHead: a handler that panics after its response started leaves
// that response incomplete by closing its lane (§8.3); the other lane serves on.
func TestLanesPanicAfterHead(t *testing.T) {
	ls := startLanes(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/throw" {
			io.WriteString(w, "partial")
			w.(http.Flusher).Flush()
			panic("after the head")
		}
		io.WriteString(w, "ok")
	}), 2)
	ls.write(2, request("/throw", "r2", "t2"))
	resp, err := http.ReadResponse(ls.resp[1], nil)
	if err != nil {
		t.Fatal(err)
	}
	if body, err := io.ReadAll(resp.Body); err != io.ErrUnexpectedEOF || string(body) != "partial" {
		t.Fatalf("lane 2: got %q, %v; want partial, cut short", body, err)
	}
	ls.write(1, request("/ok", "r1", "t1"))
	if _, body := ls.response(1); body != "ok" {
		t.Fatalf("lane 1: got %q", body)
	}
	if err := ls.end(); err == nil || !strings.Contains(err.Error(), "panicked") {
		t.Fatalf("Serve: %v; want the panic's error", err)
	}
}

// TestLanesEndAtEOF: EOF on a lane ends that lane only; Serve returns nil once every
// lane has ended, after the exchange still in flight on another lane (§2.5, §9.4).
func TestLanesEndAtEOF(t *testing.T) {
	running := make(chan struct{})
	release := make(chan struct{})
	ls := startLanes(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(running)
		<-release
		io.WriteString(w, "late")
	}), 3)
	ls.write(2, request("/wait", "r2", "t2"))
	waitFor(t, running, "lane 2's handler")
	ls.req[0].Close()
	ls.req[2].Close()
	ls.expectEOF(1)
	ls.expectEOF(3)
	select {
	case <-ls.done:
		t.Fatalf("Serve returned (%v) with an exchange in flight on lane 2", ls.err)
	default:
	}
	close(release)
	if _, body := ls.response(2); body != "late" {
		t.Fatalf("lane 2: got %q", body)
	}
	if err := ls.end(); err != nil {
		t.Fatalf("Serve: %v; want nil after EOF on every lane", err)
	}
	ls.expectEOF(2)
}

func TestLanesEnvironmentErrors(t *testing.T) {
	tests := []struct{ name, value string }{
		{"AFTERBURN_STREAM_FDS", "5"},
		{"AFTERBURN_STREAM_FDS", "5,6,7"},
		{"AFTERBURN_STREAM_FDS", ""},
		{"AFTERBURN_STREAM_FDS", "5;6"},
		{"AFTERBURN_STREAM_FDS", "5,,6,7"},
		{"AFTERBURN_STREAM_FDS", " 5,6"},
		{"AFTERBURN_STREAM_FDS", "1,2"},
		{"AFTERBURN_STREAM_FDS", "5,-6"},
		{"AFTERBURN_STREAM_FDS", "1000001,1000002"}, // not open
		{"AFTERBURN_STREAM_CANCEL_FD", ""},
		{"AFTERBURN_STREAM_CANCEL_FD", "x"},
		{"AFTERBURN_STREAM_CANCEL_FD", "9,10"},
		{"AFTERBURN_STREAM_CANCEL_FD", "1000001"}, // not open
	}
	for _, tt := range tests {
		t.Run(tt.name+"="+tt.value, func(t *testing.T) {
			in, out, req, resp := pipeFDs(t)
			defer req.Close()
			defer resp.Close()
			t.Setenv("AFTERBURN_FDS", fmt.Sprintf("%d,%d", in, out))
			t.Setenv(tt.name, tt.value)
			err := Serve(http.NotFoundHandler())
			if err == nil || !strings.HasPrefix(err.Error(), "afterburn: ") || !strings.Contains(err.Error(), tt.name) {
				t.Fatalf("Serve returned %v; want an error naming %s", err, tt.name)
			}
		})
	}
	t.Run("MaxLanes(0)", func(t *testing.T) {
		if err := Serve(http.NotFoundHandler(), MaxLanes(0)); err == nil || !strings.Contains(err.Error(), "MaxLanes") {
			t.Fatalf("Serve returned %v; want an error naming MaxLanes", err)
		}
	})
}

// TestLanesEnvironmentExit: a worker given a malformed AFTERBURN_STREAM_FDS, or a
// malformed offer of lanes, exits non-zero with a message on stderr (§2.5), as a
// process.
func TestLanesEnvironmentExit(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a process")
	}
	for _, name := range []string{givenFDsVar, offeredFDsVar} {
		t.Run(name, func(t *testing.T) {
			cmd := exec.Command(os.Args[0])
			for _, kv := range os.Environ() {
				if !strings.HasPrefix(kv, "AFTERBURN_") {
					cmd.Env = append(cmd.Env, kv)
				}
			}
			cmd.Env = append(cmd.Env, "AFTERBURN_TEST_CHILD=legacy", name+"=5,6,7")
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			err := cmd.Run()
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() == 0 || !strings.Contains(stderr.String(), "bad "+name+` in environment: "5,6,7"`) {
				t.Fatalf("worker: %v; stderr %q; want a non-zero exit naming %s", err, stderr.String(), name)
			}
		})
	}
}
