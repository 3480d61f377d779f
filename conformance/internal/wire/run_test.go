package wire

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/afterburn-dev/afterburn/conformance/internal/check"
	"github.com/afterburn-dev/afterburn/conformance/internal/vectors"
)

// TestMain lets the test binary act as a tiny worker (like net/http/cgi's
// tests re-run their own binary as the child): it answers the handshake and
// echoes on fd 3/4, enough to test the runner, not a library.
func TestMain(m *testing.M) {
	if os.Getenv("WIRE_TEST_CHILD") == "1" {
		child()
		return
	}
	os.Exit(m.Run())
}

func child() {
	if os.Getenv("WIRE_TEST_STREAMS") == "1" {
		streamsChild()
	}
	serveLane(os.NewFile(3, "request"), os.NewFile(4, "response"), "")
}

// streamsChild serves lane 1 and lanes 2 to K as §2.5 passes them, after
// checking the variables name fds 5, 6, … and the cancel pipe after them.
func streamsChild() {
	fds := strings.Split(os.Getenv("AFTERBURN_STREAM_FDS"), ",")
	want := []string{}
	for fd := 5; fd < 5+len(fds); fd++ {
		want = append(want, fmt.Sprint(fd))
	}
	if strings.Join(fds, ",") != strings.Join(want, ",") || len(fds)%2 != 0 ||
		os.Getenv("AFTERBURN_STREAM_CANCEL_FD") != fmt.Sprint(5+len(fds)) {
		fmt.Fprintf(os.Stderr, "bad lane variables %q %q\n", os.Getenv("AFTERBURN_STREAM_FDS"), os.Getenv("AFTERBURN_STREAM_CANCEL_FD"))
		os.Exit(2)
	}
	for i := 0; i < len(fds); i += 2 {
		go serveLane(os.NewFile(uintptr(5+i), "request"), os.NewFile(uintptr(6+i), "response"), "")
	}
	serveLane(os.NewFile(3, "request"), os.NewFile(4, "response"), fmt.Sprint(1+len(fds)/2))
}

// serveLane answers requests on one lane; streams, when set, is the
// AfterBurn-Streams of the handshake reply.
func serveLane(req, out *os.File, streams string) {
	in := bufio.NewReader(req)
	for {
		req, err := http.ReadRequest(in)
		if err == io.EOF {
			os.Exit(0)
		}
		if err != nil {
			body := `{"type": "bad_request", "message": "the request is malformed"}`
			fmt.Fprintf(out, "HTTP/1.1 400 Bad Request\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
			os.Exit(1)
		}
		b, _ := io.ReadAll(req.Body)
		if req.Header.Get("AfterBurn-Handshake") != "" {
			extra := ""
			if streams != "" {
				extra = "AfterBurn-Capabilities: exchange, streams\r\nAfterBurn-Streams: " + streams + "\r\n"
			}
			io.WriteString(out, "HTTP/1.1 200 OK\r\nAfterBurn-Protocol: 1\r\n"+extra+"Content-Length: 0\r\n\r\n")
			continue
		}
		if req.URL.Path == "/crash" {
			os.Exit(13)
		}
		e, _ := json.Marshal(map[string]any{"method": req.Method, "path": req.URL.Path,
			"body_b64": base64.StdEncoding.EncodeToString(b), "body_len": len(b),
			"headers": [][]string{{"host", req.Host}}})
		fmt.Fprintf(out, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(e), e)
	}
}

func runVectorJSON(t *testing.T, obj string) error {
	t.Helper()
	return runVectorLanes(t, obj, 1)
}

func runVectorLanes(t *testing.T, obj string, lanes int) error {
	t.Helper()
	f, err := vectors.Parse([]byte(`{"group": "t", "vectors": [` + obj + `]}`))
	if err != nil {
		t.Fatalf("vector: %v", err)
	}
	t.Setenv("WIRE_TEST_CHILD", "1")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return RunOnLane(ctx, exe, &f.Vectors[0], lanes, 0)
}

// TestRunOnLane: with -lanes K a vector runs on another lane of a library that lists streams,
// and is skipped for one that does not (§2.5).
func TestRunOnLane(t *testing.T) {
	const echo = `{"id": "t/x", "section": "2.5", "level": "MUST", "description": "d", "kind": "parse",
		"request": ["POST /echo HTTP/1.1\r\nHost: fn\r\nContent-Length: 2\r\n\r\nhi"],
		"expect": [{"echo": {"method": "POST", "path": "/echo", "body_b64": "aGk="}}]}`
	t.Run("no streams: skipped", func(t *testing.T) {
		var skip *check.SkipError
		if err := runVectorLanes(t, echo, 3); !errors.As(err, &skip) {
			t.Fatalf("got %v; want a skip", err)
		}
	})
	t.Run("streams: runs on lane 2", func(t *testing.T) {
		t.Setenv("WIRE_TEST_STREAMS", "1")
		if err := runVectorLanes(t, echo, 3); err != nil {
			t.Fatalf("got failure:\n%v", err)
		}
	})
}

func TestRun(t *testing.T) {
	const head = `"id": "t/x", "section": "4.2", "level": "MUST", "description": "d"`
	for _, tc := range []struct {
		name, vector, wantErr string
	}{
		{"echo passes", `{` + head + `, "kind": "parse",
			"request": ["POST /echo HTTP/1.1\r\nHost: fn\r\nContent-Le", "ngth: 2\r\n\r\nhi"],
			"expect": [{"echo": {"method": "POST", "path": "/echo", "body_b64": "aGk=", "headers": [["host", "fn"]]}}]}`, ""},
		{"echo mismatch fails with got/want", `{` + head + `, "kind": "parse",
			"request": ["GET /echo HTTP/1.1\r\nHost: fn\r\n\r\n"],
			"expect": [{"echo": {"method": "PUT"}}]}`, `echo method: got "GET"; want "PUT"`},
		{"keep-alive", `{` + head + `, "kind": "parse",
			"request": ["GET /echo/1 HTTP/1.1\r\nHost: fn\r\n\r\nGET /echo/2 HTTP/1.1\r\nHost: fn\r\n\r\n"],
			"expect": [{"echo": {"path": "/echo/1"}}, {"echo": {"path": "/echo/2"}}]}`, ""},
		{"reject passes", `{` + head + `, "kind": "parse",
			"request": ["GARBAGE\r\n\r\n"], "expect": [{"reject": {"status": 400, "type": "bad_request"}}]}`, ""},
		{"reject of the wrong status fails", `{` + head + `, "kind": "parse",
			"request": ["GARBAGE\r\n\r\n"], "expect": [{"reject": {"status": 431, "type": "headers_too_large"}}]}`, "status: got 400; want 431"},
		{"eof after close", `{` + head + `, "kind": "fixture", "close_request_pipe": true,
			"request": ["GET /echo HTTP/1.1\r\nHost: fn\r\n\r\n"], "expect": [{"echo": {}}, {"eof": true}]}`, ""},
		{"exit code", `{` + head + `, "kind": "fixture",
			"request": ["GET /crash HTTP/1.1\r\nHost: fn\r\n\r\n"], "expect": [{"eof": true, "exit": 13}]}`, ""},
		{"wrong exit code", `{` + head + `, "kind": "fixture",
			"request": ["GET /crash HTTP/1.1\r\nHost: fn\r\n\r\n"], "expect": [{"eof": true}]}`, "want exit status 0"},
		{"missing response fails", `{` + head + `, "kind": "fixture",
			"request": ["GET /crash HTTP/1.1\r\nHost: fn\r\n\r\n"], "expect": [{"echo": {}}]}`, "response pipe closed"},
		{"handshake false", `{` + head + `, "kind": "fixture", "handshake": false,
			"request": ["` + strings.ReplaceAll(strings.ReplaceAll(Handshake, "\r", `\r`), "\n", `\n`) + `"],
			"expect": [{"response": {"status": 200, "headers": [["afterburn-protocol", "1"]]}}]}`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := runVectorJSON(t, tc.vector)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("got failure:\n%v", err)
			case tc.wantErr != "" && err == nil:
				t.Errorf("got pass; want a failure mentioning %q", tc.wantErr)
			case tc.wantErr != "" && !strings.Contains(err.Error(), tc.wantErr):
				t.Errorf("got failure:\n%v\nwant it to mention %q", err, tc.wantErr)
			}
		})
	}
}

func TestRequestMethods(t *testing.T) {
	b := []byte(Handshake + "HEAD /a HTTP/1.1\r\nHost: fn\r\n\r\nPOST /b HTTP/1.1\r\nHost: fn\r\nContent-Length: 3\r\n\r\nabcGET /c HTTP/1.1\r\nHost: fn\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nx\r\n0\r\n\r\nBAD\r\n\r\n")
	got := strings.Join(requestMethods(b), " ")
	if want := "OPTIONS HEAD POST GET"; got != want {
		t.Errorf("got %q; want %q", got, want)
	}
}
