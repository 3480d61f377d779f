//go:build unix

package afterburn

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// nonblocking reports whether fd has O_NONBLOCK set.
func nonblocking(t *testing.T, fd int) bool {
	t.Helper()
	flags, _, errno := syscall.Syscall(syscall.SYS_FCNTL, uintptr(fd), syscall.F_GETFL, 0)
	if errno != 0 {
		t.Fatal(errno)
	}
	return flags&syscall.O_NONBLOCK != 0
}

// A blocking pipe, as a watchdog hands it, is put on the runtime's poller: made
// non-blocking, and its reads wait in the poller (a deadline works) rather than in
// read(2).
func TestPollablePipe(t *testing.T) {
	var p [2]int
	if err := syscall.Pipe(p[:]); err != nil {
		t.Fatal(err)
	}
	if nonblocking(t, p[0]) {
		t.Fatal("syscall.Pipe made a non-blocking pipe; the test needs a blocking one")
	}
	r, w := pollable(p[0], "r"), pollable(p[1], "w")
	defer r.Close()
	defer w.Close()
	for _, fd := range p {
		if !nonblocking(t, fd) {
			t.Errorf("fd %d: blocking after pollable; want O_NONBLOCK", fd)
		}
	}
	// A read that waits is on the poller: its deadline ends it.
	r.SetReadDeadline(time.Now().Add(10 * time.Millisecond))
	if _, err := r.Read(make([]byte, 1)); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("read of an empty pipe past its deadline: %v; want %v", err, os.ErrDeadlineExceeded)
	}
	r.SetReadDeadline(time.Time{})
	// Writes stay whole: one larger than the pipe waits for the reader.
	big := strings.Repeat("x", 1<<20)
	go func() { io.WriteString(w, big); w.Close() }()
	got, err := io.ReadAll(r)
	if err != nil || len(got) != len(big) {
		t.Errorf("read %d bytes, %v; want %d, EOF", len(got), err, len(big))
	}
}

// The fallback: a descriptor the poller does not take (a regular file) stays
// blocking, and Serve works on it as before.
func TestPollableRegularFile(t *testing.T) {
	dir := t.TempDir()
	reqPath, respPath := filepath.Join(dir, "requests"), filepath.Join(dir, "responses")
	if err := os.WriteFile(reqPath, []byte("GET /a HTTP/1.1\r\nHost: fn\r\nAfterBurn-Request-Id: file-1\r\n\r\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	in, err := syscall.Open(reqPath, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	out, err := syscall.Open(respPath, syscall.O_WRONLY|syscall.O_CREAT|syscall.O_CLOEXEC, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	f := pollable(in, "requests")
	if nonblocking(t, in) {
		t.Errorf("a regular file is left non-blocking")
	}
	if err := f.SetReadDeadline(time.Time{}); err != os.ErrNoDeadline {
		t.Errorf("SetReadDeadline on a regular file: %v; want %v (not on the poller)", err, os.ErrNoDeadline)
	}
	// Serve opens the descriptors itself: give it a fresh one.
	in2, err := syscall.Dup(in)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	t.Setenv("AFTERBURN_FDS", fmt.Sprintf("%d,%d", in2, out))
	err = Serve(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "hello "+RequestID(r))
	}))
	if err != nil {
		t.Fatalf("Serve: %v; want nil at the end of the requests", err)
	}
	got, _ := os.ReadFile(respPath)
	if !strings.HasPrefix(string(got), "HTTP/1.1 200 OK\r\n") || !strings.HasSuffix(string(got), "\r\n\r\nhello file-1") {
		t.Errorf("responses file:\n%q\nwant a 200 with body %q", got, "hello file-1")
	}
}

// When the watchdog closes its end of the response pipe the write fails with EPIPE
// (the process is not killed by SIGPIPE: the pipe is not fd 1 or 2), and Serve returns
// the error rather than waiting for the pipe.
func TestServeResponsePipeClosed(t *testing.T) {
	reqR, reqW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	respR, respW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	in, out := dupFD(t, reqR), dupFD(t, respW)
	reqR.Close()
	respW.Close()
	defer reqW.Close()
	t.Setenv("AFTERBURN_FDS", fmt.Sprintf("%d,%d", in, out))
	respR.Close() // the watchdog went away
	served := make(chan error, 1)
	go func() {
		served <- Serve(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Write(make([]byte, 1<<20))
		}))
	}()
	io.WriteString(reqW, "GET / HTTP/1.1\r\nHost: fn\r\n\r\n")
	err = waitFor(t, served, "Serve's return")
	if !errors.Is(err, syscall.EPIPE) {
		t.Errorf("Serve: %v; want EPIPE", err)
	}
}

// A lone lane keeps blocking descriptors, read and written outside the poller; lane 1
// of several is on the poller like the others (openLanes). One lane of an offer is a
// lone lane (§2.5 "Offered lanes").
func TestLaneFilesBlockingAlone(t *testing.T) {
	for _, tc := range []struct {
		pairs     int
		offered   bool
		maxLanes  int
		preferred int
		polled    bool
	}{
		{0, false, defaultMaxLanes, 1, false},
		{1, false, defaultMaxLanes, 1, true},
		{1, false, 1, 1, false}, // MaxLanes(1): lane 2 is closed, lane 1 is alone
		{1, true, defaultMaxLanes, 1, false},
		{1, true, defaultMaxLanes, 2, true},
	} {
		t.Run(fmt.Sprintf("pairs=%d offered=%v max=%d preferred=%d", tc.pairs, tc.offered, tc.maxLanes, tc.preferred), func(t *testing.T) {
			// The watchdog's ends of each pipe: the lanes own the worker's.
			var watchdogEnds []int
			t.Cleanup(func() {
				for _, fd := range watchdogEnds {
					syscall.Close(fd)
				}
			})
			// Pipe and SetNonblock, not Pipe2: the test runs on every unix.
			mk := func() (int, int) {
				var p [2]int
				if err := syscall.Pipe(p[:]); err != nil {
					t.Fatal(err)
				}
				for _, fd := range p {
					if err := syscall.SetNonblock(fd, true); err != nil {
						t.Fatal(err)
					}
				}
				return p[0], p[1]
			}
			in, toWorker := mk()
			fromWorker, out := mk()
			watchdogEnds = append(watchdogEnds, toWorker, fromWorker)
			le := laneEnv{cancel: -1, offered: tc.offered}
			for range tc.pairs {
				a, aw := mk()
				br, b := mk()
				watchdogEnds = append(watchdogEnds, aw, br)
				le.pairs = append(le.pairs, [2]int{a, b})
			}
			lanes, _, err := openLanes(in, out, le, le.lanesInUse(tc.maxLanes, tc.preferred))
			if err != nil {
				t.Fatal(err)
			}
			defer func() {
				for _, l := range lanes {
					l.in.Close()
					l.out.Close()
				}
			}()
			for _, f := range []*os.File{lanes[0].in, lanes[0].out} {
				onPoller := !errors.Is(f.SetDeadline(time.Time{}), os.ErrNoDeadline)
				if onPoller != tc.polled {
					t.Errorf("%s: on the poller %v; want %v", f.Name(), onPoller, tc.polled)
				}
				if nb := nonblocking(t, int(fdOf(t, f))); nb != tc.polled {
					t.Errorf("%s: O_NONBLOCK %v; want %v", f.Name(), nb, tc.polled)
				}
			}
		})
	}
}

// fdOf returns f's descriptor without changing its mode (f.Fd makes it blocking).
func fdOf(t *testing.T, f *os.File) uintptr {
	t.Helper()
	rc, err := f.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var fd uintptr
	rc.Control(func(u uintptr) { fd = u })
	return fd
}
