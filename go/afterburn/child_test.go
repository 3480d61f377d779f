package afterburn

// End-to-end tests of Serve over real pipes. In fd mode Serve runs in this process on
// duplicates of os.Pipe descriptors named by AFTERBURN_FDS. Stdio and legacy modes
// rewire fds 0 and 1, so, like net/http/cgi's tests, they re-run this test binary as
// the worker (TestMain below), steered by AFTERBURN_TEST_CHILD. Nothing waits on a
// timer: every step waits for the protocol's own bytes.

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/afterburn-dev/afterburn/go/afterburn/internal/shapetest"
)

func TestMain(m *testing.M) {
	if shapetest.IsWorker() {
		os.Exit(e2eMain()) // started by the watchdog: e2e_linux_test.go, counts_linux_test.go
	}
	if mode := os.Getenv("AFTERBURN_TEST_CHILD"); mode == "e2e" {
		os.Exit(e2eMain())
	} else if mode != "" {
		os.Exit(childMain(mode))
	}
	os.Exit(m.Run())
}

// childMain is the worker of TestStdoutProtection.
func childMain(mode string) int {
	if mode == "stdio" {
		// Package init already moved the protocol off fd 1: a banner is safe.
		fmt.Println("HTTP/1.1 200 banner from main")
		syscall.Write(1, []byte("raw banner\n"))
	}
	err := Serve(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		text := r.URL.Query().Get("text")
		fmt.Println(text)
		os.Stdout.WriteString(text + " via os.Stdout\n")
		syscall.Write(1, []byte(text+" via write(1)\n"))
		n, err := os.Stdin.Read(make([]byte, 64))
		fmt.Fprintf(w, "stdin read %d %v", n, err)
	}))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// e2eHandler is the benchmark's Go function (bench/functions/go/afterburn): an empty
// body gets a greeting, any other is streamed back as it arrives; /sleep?ms=N holds
// its lane for N ms first.
var e2eHandler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/sleep" {
		ms, _ := strconv.Atoi(r.URL.Query().Get("ms"))
		time.Sleep(time.Duration(ms) * time.Millisecond)
	}
	w.Header().Set("Content-Type", "text/plain")
	if r.ContentLength == 0 {
		io.WriteString(w, "Hello, world!\n")
		return
	}
	if r.ContentLength > 0 {
		w.Header().Set("Content-Length", strconv.FormatInt(r.ContentLength, 10))
	}
	io.Copy(w, r.Body)
})

// e2eMain is the worker's main.
func e2eMain() int {
	if err := Serve(e2eHandler); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// worker is Serve running in this process on a fresh pair of pipes.
type worker struct {
	t        testing.TB
	req      *os.File      // the watchdog's end of the request pipe
	resp     *bufio.Reader // the watchdog's end of the response pipe
	respFile *os.File      // resp's pipe
	done     chan struct{} // closed when Serve returned
	err      error         // what Serve returned
}

func startWorker(t testing.TB, h http.Handler) *worker {
	t.Helper()
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
	t.Setenv("AFTERBURN_FDS", fmt.Sprintf("%d,%d", in, out))
	w := &worker{t: t, req: reqW, resp: bufio.NewReader(respR), respFile: respR, done: make(chan struct{})}
	go func() {
		defer close(w.done)
		w.err = Serve(h)
	}()
	t.Cleanup(func() {
		reqW.Close()
		<-w.done
		respR.Close()
	})
	return w
}

func dupFD(t testing.TB, f *os.File) int {
	t.Helper()
	sc, err := f.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var nfd int
	var derr error
	if err := sc.Control(func(fd uintptr) { nfd, derr = syscall.Dup(int(fd)) }); err != nil {
		t.Fatal(err)
	}
	if derr != nil {
		t.Fatal(derr)
	}
	return nfd
}

func (w *worker) write(s string) {
	w.t.Helper()
	if _, err := io.WriteString(w.req, s); err != nil {
		w.t.Fatal(err)
	}
}

func (w *worker) response() (*http.Response, string) {
	w.t.Helper()
	resp, err := http.ReadResponse(w.resp, nil)
	if err != nil {
		w.t.Fatalf("reading a response: %v", err)
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		w.t.Fatalf("reading a response body: %v", err)
	}
	return resp, string(body)
}

// end closes the request pipe and returns what Serve returned, after checking that
// the response pipe holds nothing more.
func (w *worker) end() error {
	w.t.Helper()
	w.req.Close()
	<-w.done
	err := w.err
	if rest, _ := io.ReadAll(w.resp); len(rest) > 0 {
		w.t.Errorf("unexpected bytes on the response pipe: %q", rest)
	}
	return err
}

func TestServeKeepAlive(t *testing.T) {
	w := startWorker(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		fmt.Fprintf(w, "%s %s %s %s", r.Method, r.URL.Path, body, RequestID(r))
	}))
	w.write(handshake)
	if resp, _ := w.response(); resp.StatusCode != 200 || resp.Header.Get("AfterBurn-Protocol") != "1" ||
		resp.Header.Get("AfterBurn-Library") != "go/"+version {
		t.Fatalf("handshake reply %d %v", resp.StatusCode, resp.Header)
	}
	for i := range 500 {
		if i%2 == 0 {
			w.write(fmt.Sprintf("GET /g/%d HTTP/1.1\r\nHost: fn\r\nAfterBurn-Request-Id: r%d\r\n\r\n", i, i))
		} else {
			w.write(fmt.Sprintf("POST /p/%d HTTP/1.1\r\nHost: fn\r\nAfterBurn-Request-Id: r%d\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nhi\r\n0\r\n\r\n", i, i))
		}
		_, body := w.response()
		want := fmt.Sprintf("GET /g/%d  r%d", i, i)
		if i%2 == 1 {
			want = fmt.Sprintf("POST /p/%d hi r%d", i, i)
		}
		if body != want {
			t.Fatalf("response %d: got %q; want %q", i, body, want)
		}
	}
	// PROTOCOL.md §9.4: EOF between requests ends Serve with nil.
	if err := w.end(); err != nil {
		t.Fatalf("Serve after EOF: %v; want nil", err)
	}
}

// TestServeLockstep proves that chunks are flushed as written and that the body
// streams while the response is being written (PROTOCOL.md §6.1, §6.2): each line is
// only sent after the previous one came back.
func TestServeLockstep(t *testing.T) {
	w := startWorker(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		br := bufio.NewReader(r.Body)
		for {
			line, err := br.ReadBytes('\n')
			if len(line) > 0 {
				w.Write(line)
				w.(http.Flusher).Flush()
			}
			if err != nil {
				return
			}
		}
	}))
	w.write("POST /lockstep HTTP/1.1\r\nHost: fn\r\nTransfer-Encoding: chunked\r\n\r\n")
	w.write("6\r\nline0\n\r\n")
	resp, err := http.ReadResponse(w.resp, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.TransferEncoding) != 1 || resp.TransferEncoding[0] != "chunked" {
		t.Fatalf("got Transfer-Encoding %v; want chunked", resp.TransferEncoding)
	}
	body := bufio.NewReader(resp.Body)
	for i := range 50 {
		got, err := body.ReadString('\n')
		if want := fmt.Sprintf("line%d\n", i); got != want || err != nil {
			t.Fatalf("line %d: got %q, %v; want %q", i, got, err, want)
		}
		if i < 49 {
			s := fmt.Sprintf("line%d\n", i+1)
			w.write(fmt.Sprintf("%x\r\n%s\r\n", len(s), s))
		}
	}
	w.write("0\r\n\r\n")
	if rest, err := io.ReadAll(body); err != nil || len(rest) > 0 {
		t.Fatalf("after the last line: %q, %v", rest, err)
	}
	if err := w.end(); err != nil {
		t.Fatal(err)
	}
}

func TestServePanicThenNext(t *testing.T) {
	w := startWorker(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/throw" {
			panic("boom")
		}
		io.WriteString(w, "ok")
	}))
	w.write("GET /throw HTTP/1.1\r\nHost: fn\r\nAfterBurn-Request-Id: t1\r\n\r\nGET /next HTTP/1.1\r\nHost: fn\r\n\r\n")
	resp, body := w.response()
	if resp.StatusCode != 500 || resp.Header.Get("AfterBurn-Error") != "handler_error" || !strings.Contains(body, `"request_id":"t1"`) {
		t.Fatalf("got %d %v %s", resp.StatusCode, resp.Header, body)
	}
	if _, body := w.response(); body != "ok" {
		t.Fatalf("after the panic: %q", body)
	}
	if err := w.end(); err != nil {
		t.Fatal(err)
	}
}

func TestServeFramingError(t *testing.T) {
	w := startWorker(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	w.write(get + "GET /x HTTP/1.1\r\nHost: fn\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\nx")
	if resp, _ := w.response(); resp.StatusCode != 200 {
		t.Fatalf("first response %d", resp.StatusCode)
	}
	resp, body := w.response()
	if resp.StatusCode != 400 || !strings.Contains(body, `"type":"bad_request"`) {
		t.Fatalf("got %d %s", resp.StatusCode, body)
	}
	// PROTOCOL.md §8.8: the response pipe is closed and Serve returns an error.
	if rest, err := io.ReadAll(w.resp); err != nil || len(rest) > 0 {
		t.Fatalf("after the error response: %q, %v; want EOF", rest, err)
	}
	<-w.done
	err := w.err
	var perr *protocolError
	if !errors.As(err, &perr) || !strings.HasPrefix(err.Error(), "afterburn: ") || !strings.Contains(err.Error(), "Content-Length") {
		t.Fatalf("Serve: %v; want the framing error", err)
	}
}

func TestServeEnvironmentErrors(t *testing.T) {
	for _, v := range []string{"3;4", "", "1000001,1000002"} {
		t.Setenv("AFTERBURN_FDS", v)
		err := Serve(http.NotFoundHandler())
		if err == nil || !strings.HasPrefix(err.Error(), "afterburn: ") || !strings.Contains(err.Error(), "AFTERBURN_FDS") {
			t.Errorf("AFTERBURN_FDS=%q: Serve returned %v; want an error naming it", v, err)
		}
	}
}

// TestStdoutProtection runs a worker whose protocol is on stdin and stdout, and whose
// code prints to stdout every way Go can (PROTOCOL.md §2.4).
func TestStdoutProtection(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a process")
	}
	for _, mode := range []string{"stdio", "legacy"} {
		t.Run(mode, func(t *testing.T) {
			cmd := exec.Command(os.Args[0])
			for _, kv := range os.Environ() {
				if !strings.HasPrefix(kv, "AFTERBURN_") {
					cmd.Env = append(cmd.Env, kv)
				}
			}
			cmd.Env = append(cmd.Env, "AFTERBURN_TEST_CHILD="+mode)
			var in string
			if mode == "stdio" {
				cmd.Env = append(cmd.Env, "AFTERBURN_FDS=0,1")
				in = handshake
			}
			in += "GET /print?text=NOT%20HTTP HTTP/1.1\r\nHost: fn\r\n\r\nGET /print?text=again HTTP/1.1\r\nHost: fn\r\n\r\n"
			cmd.Stdin = strings.NewReader(in)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("worker: %v; stderr:\n%s", err, stderr.String())
			}
			rs := readResponses(t, string(out))
			if mode == "stdio" {
				if len(rs) == 0 || rs[0].Header.Get("AfterBurn-Protocol") != "1" {
					t.Fatalf("no handshake reply first in %q", out)
				}
				rs = rs[1:]
			}
			if len(rs) != 2 {
				t.Fatalf("got %d responses in %q; want 2", len(rs), out)
			}
			for _, r := range rs {
				if string(r.body) != "stdin read 0 EOF" {
					t.Errorf("response %q; want stdin to be /dev/null", r.body)
				}
			}
			for _, want := range []string{"NOT HTTP\n", "NOT HTTP via os.Stdout\n", "NOT HTTP via write(1)\n", "again via write(1)\n"} {
				if !strings.Contains(stderr.String(), want) {
					t.Errorf("stderr lacks %q:\n%s", want, stderr.String())
				}
			}
			if mode == "stdio" && !strings.Contains(stderr.String(), "HTTP/1.1 200 banner from main\nraw banner\n") {
				t.Errorf("stderr lacks the banner printed before Serve:\n%s", stderr.String())
			}
		})
	}
}
