package wire

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

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
	in := bufio.NewReader(os.NewFile(3, "request"))
	out := os.NewFile(4, "response")
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
			io.WriteString(out, "HTTP/1.1 200 OK\r\nAfterBurn-Protocol: 1\r\nContent-Length: 0\r\n\r\n")
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
	return Run(ctx, exe, &f.Vectors[0])
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
