package main

// The fixture's lane routes (conformance/README.md, PROTOCOL.md §2.5), tested on the
// fixture as a process: this test binary re-runs itself as the fixture, given three
// lanes and a cancel pipe as a watchdog started with -lanes 3 would give them.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestMain(m *testing.M) {
	if os.Getenv("FIXTURE_TEST_RUN_MAIN") == "1" {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

type fixtureLanes struct {
	t      *testing.T
	req    []*os.File
	resp   []*bufio.Reader
	cancel *os.File
	cmd    *exec.Cmd
	stderr lockedBuffer
}

func startFixture(t *testing.T, k int) *fixtureLanes {
	t.Helper()
	fx := &fixtureLanes{t: t}
	var childEnds []*os.File
	pipe := func() (r, w *os.File) {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		return r, w
	}
	for range k {
		reqR, reqW := pipe()
		respR, respW := pipe()
		respR.SetReadDeadline(time.Now().Add(20 * time.Second)) // fail, not hang
		childEnds = append(childEnds, reqR, respW)
		fx.req = append(fx.req, reqW)
		fx.resp = append(fx.resp, bufio.NewReader(respR))
	}
	cancelR, cancelW := pipe()
	childEnds = append(childEnds, cancelR)
	fx.cancel = cancelW
	// ExtraFiles become fds 3, 4, … in order: lane 1 at 3,4, then the other lanes.
	stream := []string{}
	for fd := 5; fd < 3+2*k; fd++ {
		stream = append(stream, strconv.Itoa(fd))
	}
	fx.cmd = exec.Command(os.Args[0])
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "AFTERBURN_") && !strings.HasPrefix(kv, "FIXTURE_") {
			fx.cmd.Env = append(fx.cmd.Env, kv)
		}
	}
	fx.cmd.Env = append(fx.cmd.Env, "FIXTURE_TEST_RUN_MAIN=1", "AFTERBURN_FDS=3,4",
		"AFTERBURN_STREAM_FDS="+strings.Join(stream, ","), "AFTERBURN_STREAM_CANCEL_FD="+strconv.Itoa(3+2*k))
	fx.cmd.ExtraFiles = childEnds
	fx.cmd.Stderr = &fx.stderr
	if err := fx.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	for _, f := range childEnds {
		f.Close()
	}
	t.Cleanup(func() {
		fx.cmd.Process.Kill()
		fx.cmd.Wait()
	})
	fx.write(1, "OPTIONS * HTTP/1.1\r\nHost: afterburn\r\nAfterBurn-Handshake: 1\r\nContent-Length: 0\r\n\r\n")
	if resp, _ := fx.response(1); resp.Header.Get("AfterBurn-Streams") == "" {
		t.Fatalf("handshake reply without AfterBurn-Streams: %v", resp.Header)
	}
	return fx
}

// lockedBuffer is the fixture's stderr, read by the test while the process writes it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func (fx *fixtureLanes) write(lane int, s string) {
	fx.t.Helper()
	if _, err := io.WriteString(fx.req[lane-1], s); err != nil {
		fx.t.Fatalf("lane %d: %v", lane, err)
	}
}

func (fx *fixtureLanes) get(lane int, target, id, token string) {
	fx.write(lane, "GET "+target+" HTTP/1.1\r\nHost: fn\r\nAfterBurn-Request-Id: "+id+"\r\nAfterBurn-Exchange: "+token+"\r\n\r\n")
}

func (fx *fixtureLanes) response(lane int) (*http.Response, map[string]any) {
	fx.t.Helper()
	resp, err := http.ReadResponse(fx.resp[lane-1], nil)
	if err != nil {
		fx.t.Fatalf("lane %d: reading a response: %v; fixture stderr:\n%s", lane, err, fx.stderr.String())
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		fx.t.Fatalf("lane %d: %v", lane, err)
	}
	var v map[string]any
	if len(body) > 0 {
		if err := json.Unmarshal(body, &v); err != nil {
			fx.t.Fatalf("lane %d: %v in %q", lane, err, body)
		}
	}
	return resp, v
}

func TestFixtureLaneRoutes(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a process")
	}
	fx := startFixture(t, 3)
	fx.get(2, "/wait-cancel?ms=60000", "wc1", "tokW")
	fx.get(3, "/sleep?ms=200", "sl1", "tokS")
	// Lane 1 is served while lanes 2 and 3 are held.
	fx.get(1, "/log?text=hello%20lanes", "lg1", "tokL")
	if _, v := fx.response(1); v["logged"] != true {
		t.Fatalf("/log: got %v", v)
	}
	io.WriteString(fx.cancel, "cancel unknown\ncancel tokW\n")
	if resp, v := fx.response(2); v["cancelled"] != true || resp.Header.Get("AfterBurn-Exchange") != "tokW" {
		t.Fatalf("/wait-cancel after its cancel line: got %v %v", resp.Header, v)
	}
	if _, v := fx.response(3); v["slept_ms"] != 200.0 {
		t.Fatalf("/sleep: got %v", v)
	}
	// The cancelled lane's next exchange is not cancelled; /wait-cancel times out.
	fx.get(2, "/wait-cancel?ms=20", "wc2", "tokW2")
	if _, v := fx.response(2); v["cancelled"] != false {
		t.Fatalf("/wait-cancel on the lane after a cancellation: got %v", v)
	}
	fx.get(3, "/ignore-cancel?ms=20", "ic1", "tokI")
	io.WriteString(fx.cancel, "cancel tokI\n")
	if _, v := fx.response(3); v["slept_ms"] != 20.0 {
		t.Fatalf("/ignore-cancel: got %v", v)
	}
	// EOF on every lane: the fixture exits 0 (PROTOCOL.md §2.5, §9.4).
	for _, f := range fx.req {
		f.Close()
	}
	if err := fx.cmd.Wait(); err != nil {
		t.Fatalf("fixture: %v; want exit 0; stderr:\n%s", err, fx.stderr.String())
	}
	for _, want := range []string{"[lg1] hello lanes\n", "cancelled wc1\n"} {
		if !strings.Contains(fx.stderr.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, fx.stderr.String())
		}
	}
	if strings.Contains(fx.stderr.String(), "cancelled wc2") {
		t.Errorf("stderr says the lane's next exchange was cancelled:\n%s", fx.stderr.String())
	}
}
