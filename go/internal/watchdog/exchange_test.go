package watchdog

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/afterburn-dev/afterburn/go/internal/watchdog/config"
	"github.com/afterburn-dev/afterburn/go/internal/watchdog/internal/testworker"
	"github.com/afterburn-dev/afterburn/go/internal/watchdog/pool"
)

var hex32 = regexp.MustCompile(`^[0-9a-f]{32}$`)

func TestHandshakeAndReady(t *testing.T) {
	t.Parallel()
	h := start(t, func(c *config.Config) { c.Workers = 2 })
	h.waitState("two idle workers", func(st pool.Status, ready bool) bool { return st.Idle == 2 })
	for _, path := range []string{"/_/ready", "/_/health"} {
		resp, body := h.Get(path)
		var st pool.Status
		if err := json.Unmarshal([]byte(body), &st); err != nil || resp.StatusCode != 200 {
			t.Fatalf("%s: %d %q (%v)", path, resp.StatusCode, body, err)
		}
		if st.Idle != 2 || st.CrashLooping != 0 {
			t.Errorf("%s: %+v; want 2 idle", path, st)
		}
	}
	// PROTOCOL.md §2.3: the environment each worker gets. The second is asked
	// while the first is held busy (idle workers go most recent first, §10.3).
	ids := map[string]bool{}
	for i := range 2 {
		if i == 1 {
			_, release := holdWorker(t, h)
			defer release()
		}
		resp, body := h.Get("/env")
		var env map[string]string
		if err := json.Unmarshal([]byte(body), &env); err != nil || resp.StatusCode != 200 {
			t.Fatalf("/env: %d %q", resp.StatusCode, body)
		}
		for k, want := range map[string]string{
			"AFTERBURN_PROTOCOL":         "1",
			"AFTERBURN_FDS":              "3,4",
			"AFTERBURN_MAX_HEADER_BYTES": "32768",
			"AFTERBURN_MAX_BODY_BYTES":   strconv.Itoa(8 << 20),
		} {
			if env[k] != want {
				t.Errorf("%s=%q; want %q", k, env[k], want)
			}
		}
		ids[env["AFTERBURN_WORKER_ID"]] = true
	}
	if !ids["1"] || !ids["2"] {
		t.Errorf("AFTERBURN_WORKER_ID values %v; want 1 and 2", ids)
	}
}

// TestFieldsForwarded: PROTOCOL.md §4.2, §5.1, §5.3, §5.4 in both directions.
func TestFieldsForwarded(t *testing.T) {
	t.Parallel()
	h := start(t, nil)
	resp, body := h.raw("POST /headers?x=1%2F&y HTTP/1.1\r\n"+
		"Host: fn.example\r\n"+
		"Accept-Language: en\r\n"+
		"Accept-Language: fr;q=0.5\r\n"+
		"Connection: keep-alive, X-Drop\r\n"+
		"X-Drop: secret\r\n"+
		"Keep-Alive: timeout=5\r\n"+
		"TE: trailers\r\n"+
		"Upgrade: websocket\r\n"+
		"Proxy-Authorization: Basic x\r\n"+
		"AfterBurn-Request-Id: forged\r\n"+
		"AfterBurn-Timeout-Ms: 999999\r\n"+
		"afterburn-handshake: 1\r\n"+
		"Content-Length: 7\r\n"+
		"\r\n"+
		`{"n":1}`, "POST")
	if resp.StatusCode != 200 {
		t.Fatalf("status %d: %s", resp.StatusCode, body)
	}
	var seen testworker.Seen
	if err := json.Unmarshal([]byte(body), &seen); err != nil {
		t.Fatal(err)
	}
	if seen.Method != "POST" || seen.Target != "/headers?x=1%2F&y" || seen.Host != "fn.example" || seen.Proto != "HTTP/1.1" {
		t.Errorf("request line and host: %+v", seen)
	}
	if got := seen.Header["Accept-Language"]; len(got) != 2 || got[0] != "en" || got[1] != "fr;q=0.5" {
		t.Errorf("Accept-Language %q; want both values in order", got)
	}
	for _, k := range []string{"Connection", "X-Drop", "Keep-Alive", "Te", "Upgrade", "Proxy-Authorization",
		"Afterburn-Handshake", "Transfer-Encoding", "User-Agent"} {
		if v, ok := seen.Header[k]; ok {
			t.Errorf("worker got %s: %q; want it dropped", k, v)
		}
	}
	id := seen.Header.Get("AfterBurn-Request-Id")
	if !hex32.MatchString(id) || len(seen.Header["Afterburn-Request-Id"]) != 1 {
		t.Errorf("AfterBurn-Request-Id %q; want one fresh 32-hex id", seen.Header["Afterburn-Request-Id"])
	}
	ms, err := strconv.Atoi(seen.Header.Get("AfterBurn-Timeout-Ms"))
	if err != nil || ms > 10000 || ms < 9000 || len(seen.Header["Afterburn-Timeout-Ms"]) != 1 {
		t.Errorf("AfterBurn-Timeout-Ms %q; want one value just under 10000", seen.Header["Afterburn-Timeout-Ms"])
	}
	if seen.Body != `{"n":1}` || seen.Length != 7 || seen.TE != nil {
		t.Errorf("body %q length %d TE %v; want Content-Length framing", seen.Body, seen.Length, seen.TE)
	}
	// The response: every value, minus hop-by-hop and AfterBurn-* (§4.4).
	if got := resp.Header["Set-Cookie"]; len(got) != 2 {
		t.Errorf("Set-Cookie %q; want both", got)
	}
	if got := resp.Header["X-Multi"]; len(got) != 2 || got[0] != "a" || got[1] != "b" {
		t.Errorf("X-Multi %q; want a, b", got)
	}
	for _, k := range []string{"X-Hop", "Keep-Alive", "Afterburn-Secret", "Proxy-Authenticate"} {
		if v, ok := resp.Header[k]; ok {
			t.Errorf("client got %s: %q; want it dropped", k, v)
		}
	}
	// §4.4, §8.1: a library's AfterBurn-Error is the one reserved field let through.
	if got := resp.Header["Afterburn-Error"]; len(got) != 1 || got[0] != "handler_error" {
		t.Errorf("client got AfterBurn-Error %q; want the worker's handler_error", got)
	}
	if got := resp.Header.Get("AfterBurn-Request-Id"); got != id {
		t.Errorf("response AfterBurn-Request-Id %q; want %q", got, id)
	}
	h.logs.waitContains(t, "id="+id+" method=POST path=/headers status=200")
}

func TestRequestID(t *testing.T) {
	t.Parallel()
	h := start(t, nil)
	long := strings.Repeat("a", 128)
	for _, tc := range []struct {
		name, header string
		reuse        bool
	}{
		{"none", "", false},
		{"valid", "abc-123.x:Y_z", true},
		{"128 chars", long, true},
		{"129 chars", long + "a", false},
		{"space", "bad id", false},
		{"slash", "a/b", false},
	} {
		req, _ := http.NewRequest("GET", h.url+"/headers", nil)
		if tc.header != "" {
			req.Header.Set("X-Request-Id", tc.header)
		}
		resp, body := h.do(req)
		var seen testworker.Seen
		json.Unmarshal([]byte(body), &seen)
		got := resp.Header.Get("AfterBurn-Request-Id")
		if tc.reuse && got != tc.header || !tc.reuse && !hex32.MatchString(got) {
			t.Errorf("%s: AfterBurn-Request-Id %q for X-Request-Id %q", tc.name, got, tc.header)
		}
		if w := seen.Header.Get("AfterBurn-Request-Id"); w != got {
			t.Errorf("%s: worker saw %q; client got %q", tc.name, w, got)
		}
		if tc.header != "" && seen.Header.Get("X-Request-Id") != tc.header {
			t.Errorf("%s: X-Request-Id not forwarded", tc.name)
		}
	}
}

// PROTOCOL.md §5.6: with trust_request_id false a valid client id is
// forwarded as any field, and the request gets a fresh id of its own.
func TestRequestIDNotTrusted(t *testing.T) {
	t.Parallel()
	h := start(t, func(c *config.Config) { c.TrustRequestID = false })
	req, _ := http.NewRequest("GET", h.url+"/headers", nil)
	req.Header.Set("X-Request-Id", "client-chosen")
	resp, body := h.do(req)
	var seen testworker.Seen
	json.Unmarshal([]byte(body), &seen)
	got := resp.Header.Get("AfterBurn-Request-Id")
	if !hex32.MatchString(got) || seen.Header.Get("AfterBurn-Request-Id") != got {
		t.Errorf("AfterBurn-Request-Id %q to the client, %q to the worker; want the same fresh id", got, seen.Header.Get("AfterBurn-Request-Id"))
	}
	if seen.Header.Get("X-Request-Id") != "client-chosen" {
		t.Errorf("X-Request-Id not forwarded: %q", seen.Header.Get("X-Request-Id"))
	}
}

// TestChunkedBodyAndTrailers: §4.2 chunked framing and trailers both ways.
func TestChunkedBodyAndTrailers(t *testing.T) {
	t.Parallel()
	h := start(t, nil)
	resp, body := h.raw("POST /trailers HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nTrailer: X-Checksum\r\n\r\n"+
		"5\r\nhello\r\n6\r\n world\r\n0\r\nX-Checksum: abc\r\nAfterBurn-Request-Id: forged\r\n\r\n", "POST")
	if resp.StatusCode != 200 || body != "hello world" {
		t.Fatalf("got %d %q", resp.StatusCode, body)
	}
	if got := resp.Trailer.Get("X-Got-Checksum"); got != "abc" {
		t.Errorf("trailer X-Got-Checksum %q; want abc (trailers %v)", got, resp.Trailer)
	}
	if _, ok := resp.Trailer["Afterburn-Hidden"]; ok {
		t.Errorf("AfterBurn-* trailer reached the client")
	}
	resp, body = h.raw("POST /headers HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"+
		"3\r\nabc\r\n0\r\n\r\n", "POST")
	var seen testworker.Seen
	json.Unmarshal([]byte(body), &seen)
	if seen.Body != "abc" || seen.Length != -1 || len(seen.TE) != 1 || seen.TE[0] != "chunked" {
		t.Errorf("worker saw body %q length %d TE %v; want chunked abc", seen.Body, seen.Length, seen.TE)
	}
	if _, ok := seen.Header["Content-Length"]; ok {
		t.Errorf("chunked request also carried Content-Length")
	}
	// A request without a body gets Content-Length: 0 (§4.2).
	_, body = h.Get("/headers")
	json.Unmarshal([]byte(body), &seen)
	if seen.Header.Get("Content-Length") != "0" {
		t.Errorf("bodiless request: Content-Length %q; want 0", seen.Header.Get("Content-Length"))
	}
}

// TestNoBodyResponses: HEAD, 204 (RFC 9112 §6.3) keep the stream in step.
func TestNoBodyResponses(t *testing.T) {
	t.Parallel()
	h := start(t, nil)
	req, _ := http.NewRequest("HEAD", h.url+"/head", nil)
	resp, body := h.do(req)
	if resp.StatusCode != 200 || body != "" || resp.ContentLength != 42 {
		t.Errorf("HEAD: %d %q Content-Length %d; want 200, no body, 42", resp.StatusCode, body, resp.ContentLength)
	}
	resp, body = h.Get("/nocontent")
	if resp.StatusCode != 204 || body != "" || resp.Header.Get("X-Done") != "yes" {
		t.Errorf("204: %d %q %v", resp.StatusCode, body, resp.Header)
	}
	resp, body = h.Get("/next")
	wantBody(t, resp, body, 200, "ok GET /next")
}

// TestLargeEcho: §6.2, a body larger than the pipe buffer echoed as it is
// read cannot deadlock.
func TestLargeEcho(t *testing.T) {
	t.Parallel()
	h := start(t, nil)
	payload := make([]byte, 1<<20)
	rand.Read(payload)
	for _, chunked := range []bool{false, true} {
		var r io.Reader = bytes.NewReader(payload)
		if chunked {
			r = io.MultiReader(r) // hides the length: sent chunked
		}
		req, _ := http.NewRequest("POST", h.url+"/echo", r)
		resp, body := h.do(req)
		if resp.StatusCode != 200 || body != string(payload) {
			t.Fatalf("chunked=%v: status %d, %d bytes back, equal=%v", chunked, resp.StatusCode, len(body), body == string(payload))
		}
	}
	resp, body := h.Get("/big?n=3000000")
	if resp.StatusCode != 200 || len(body) != 3000000 {
		t.Fatalf("big: %d, %d bytes", resp.StatusCode, len(body))
	}
}

// TestStreamingLockstep: §6.1, each chunk reaches the client before the
// response ends; the client sends the next line only after it saw the
// previous echo, so buffering anywhere would deadlock.
func TestStreamingLockstep(t *testing.T) {
	t.Parallel()
	lockstep(t, start(t, nil))
}

// lockstep sends five lines on a chunked body and reads each event back
// before sending the next (§6.1, §6.2).
func lockstep(t *testing.T, h *harness) {
	t.Helper()
	pr, pw := io.Pipe()
	req, _ := http.NewRequest("POST", h.url+"/stream", pr)
	resp, err := h.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Errorf("Content-Type %q", ct)
	}
	buf := make([]byte, 100)
	for i := range 5 {
		msg := "msg " + strconv.Itoa(i)
		io.WriteString(pw, msg+"\n")
		want := "data: " + msg + "\n\n"
		if _, err := io.ReadFull(resp.Body, buf[:len(want)]); err != nil || string(buf[:len(want)]) != want {
			t.Fatalf("event %d: %q, %v; want %q", i, buf[:len(want)], err, want)
		}
	}
	pw.Close()
	if rest, err := io.ReadAll(resp.Body); err != nil || len(rest) != 0 {
		t.Fatalf("after the stream: %q, %v", rest, err)
	}
}

// TestPrintsGoToLogs: §2.4, §9.5 — fd 1 is a log pipe, tagged by worker.
func TestPrintsGoToLogs(t *testing.T) {
	t.Parallel()
	for _, prefix := range []bool{true, false} {
		h := start(t, func(c *config.Config) { c.PrefixLogs = prefix })
		for range 3 {
			resp, body := h.Get("/print")
			wantBody(t, resp, body, 200, "printed")
		}
		stamp := `\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z `
		if !prefix {
			stamp = ""
		}
		for _, stream := range []string{"stdout", "stderr"} {
			re := regexp.MustCompile(`^` + stamp + `w1 ` + stream + `: hello from ` + stream + `$`)
			h.logs.waitFor(t, re.String(), re.MatchString)
		}
	}
}

// TestStdioMode: §2.2 and §3.3 — protocol on stdin/stdout, banner skipped
// and logged.
func TestStdioMode(t *testing.T) {
	t.Parallel()
	h := start(t, func(c *config.Config) { c.Stdio = true }, "AFTERBURN_TEST_INIT=banner")
	resp, body := h.post("/echo", "over stdio")
	wantBody(t, resp, body, 200, "over stdio")
	resp, body = h.Get("/print")
	wantBody(t, resp, body, 200, "printed")
	h.logs.waitContains(t, "w1 stdout: a banner printed before the library took over")
	h.logs.waitContains(t, "w1 stderr: hello from stdout")
	_, body = h.Get("/env")
	if !strings.Contains(body, `"AFTERBURN_FDS":"0,1"`) {
		t.Errorf("env %s; want AFTERBURN_FDS=0,1", body)
	}
}

// TestNoHandshake: §11.2, handshake=false marks a worker ready at start.
func TestNoHandshake(t *testing.T) {
	t.Parallel()
	h := start(t, func(c *config.Config) { c.Handshake = false })
	resp, body := h.Get("/x")
	wantBody(t, resp, body, 200, "ok GET /x")
}
