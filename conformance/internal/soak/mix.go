package soak

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
)

// kind is one sort of request in the soak's mix, built on the fixture's routes
// (conformance/README.md, "The fixture contract").
type kind struct {
	name   string
	weight int
	fault  bool // fails by design: its expected answer is an error
	// lateWriter: the fault lands on whichever request the worker serves
	// when the stale response arrives, which may then fail (Collateral).
	lateWriter bool
	build      func(r *rand.Rand, id, token string) (method, path string, body []byte)
	// check judges a response whose request id already matched. It returns
	// "" when the response is what the request asked for, "misdelivered: ..."
	// when it carries another request's content, or another description of
	// what was wrong.
	check func(resp *http.Response, body []byte, id, token string, sent []byte) string
}

// faultSleepMs is how long a /sleep fault sleeps: far past the soak's exec_timeout, so that a
// watchdog timer that fires late on a loaded machine still finds no response; the worker is
// killed at the deadline anyway, so the length costs nothing.
const faultSleepMs = 10000

func mix() []kind {
	return []kind{
		{name: "echo-get", weight: 40, build: func(r *rand.Rand, id, token string) (string, string, []byte) {
			return "GET", "/echo/" + token + "?q=" + token, nil
		}, check: checkEcho},
		{name: "echo-post", weight: 25, build: func(r *rand.Rand, id, token string) (string, string, []byte) {
			return "POST", "/echo/" + token, randomBody(r, 4096)
		}, check: checkEcho},
		{name: "sha256", weight: 15, build: func(r *rand.Rand, id, token string) (string, string, []byte) {
			return "POST", "/sha256", randomBody(r, 64<<10)
		}, check: checkSHA},
		{name: "stream", weight: 10, build: func(r *rand.Rand, id, token string) (string, string, []byte) {
			return "GET", fmt.Sprintf("/stream?n=%d&size=%d", 1+r.IntN(5), 1+r.IntN(3000)), nil
		}, check: checkStream},
		{name: "status", weight: 10, build: func(r *rand.Rand, id, token string) (string, string, []byte) {
			return "GET", "/status?code=404", nil
		}, check: func(resp *http.Response, body []byte, id, token string, sent []byte) string {
			return wantStatus(resp, 404)
		}},
		{name: "crash", weight: 0, fault: true, build: fixed("GET", "/crash?when=before"),
			check: checkError(502, "worker_crashed")},
		{name: "crash-after-response", weight: 0, fault: true, build: fixed("GET", "/crash?when=after-response"),
			check: func(resp *http.Response, body []byte, id, token string, sent []byte) string {
				if s := wantStatus(resp, 200); s != "" {
					return s
				}
				if string(body) != "bye" {
					return fmt.Sprintf("misdelivered: body %q; want %q", trim(body), "bye")
				}
				return ""
			}},
		{name: "timeout", weight: 0, fault: true, build: fixed("GET", fmt.Sprintf("/sleep?ms=%d", faultSleepMs)),
			check: checkError(504, "timeout")},
		{name: "garbage", weight: 0, fault: true, build: fixed("GET", "/garbage?when=instead"),
			check: checkError(502, "bad_response")},
		{name: "throw", weight: 0, fault: true, build: fixed("GET", "/throw"),
			check: checkError(500, "handler_error")},
		// PROTOCOL.md §4.6: a whole response written later by a thread of the
		// worker, or by a child process, while the worker serves another
		// request. That request gets its own answer or an error, never it.
		{name: "late-writer", weight: 0, fault: true, lateWriter: true, build: lateWrite("late"), check: checkLate},
		{name: "late-child", weight: 0, fault: true, lateWriter: true, build: lateWrite("child"), check: checkLate},
	}
}

// lateWrite asks the fixture for a stale response 0-20 ms after its answer.
func lateWrite(how string) func(*rand.Rand, string, string) (string, string, []byte) {
	return func(r *rand.Rand, id, token string) (string, string, []byte) {
		return "GET", fmt.Sprintf("/garbage?when=%s&ms=%d", how, r.IntN(21)), nil
	}
}

func checkLate(resp *http.Response, body []byte, id, token string, sent []byte) string {
	if s := wantStatus(resp, 200); s != "" {
		return s
	}
	var got struct {
		Late bool `json:"late"`
	}
	if err := json.Unmarshal(body, &got); err != nil || !got.Late {
		return fmt.Sprintf("body %q; want {\"late\": true}", trim(body))
	}
	return ""
}

// staleBody is the body of the late writers' response (conformance/README.md,
// the fixture's /garbage routes): it answers no request.
const staleBody = `"stale"`

func fixed(method, path string) func(*rand.Rand, string, string) (string, string, []byte) {
	return func(*rand.Rand, string, string) (string, string, []byte) { return method, path, nil }
}

func randomBody(r *rand.Rand, max int) []byte {
	b := make([]byte, r.IntN(max+1))
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

func wantStatus(resp *http.Response, code int) string {
	if resp.StatusCode != code {
		return fmt.Sprintf("status %d; want %d", resp.StatusCode, code)
	}
	return ""
}

func trim(b []byte) string {
	if len(b) > 200 {
		return string(b[:200]) + "..."
	}
	return string(b)
}

// checkEcho: the echo must be of this request — its id, its path token, its body.
func checkEcho(resp *http.Response, body []byte, id, token string, sent []byte) string {
	if s := wantStatus(resp, 200); s != "" {
		return s
	}
	var e struct {
		Path      string `json:"path"`
		RequestID string `json:"request_id"`
		BodyB64   string `json:"body_b64"`
	}
	if err := json.Unmarshal(body, &e); err != nil {
		return fmt.Sprintf("echo body is not JSON: %v: %q", err, trim(body))
	}
	got, _ := base64.StdEncoding.DecodeString(e.BodyB64)
	switch {
	case e.RequestID != id:
		return fmt.Sprintf("misdelivered: echo of request %q; want %q", e.RequestID, id)
	case e.Path != "/echo/"+token:
		return fmt.Sprintf("misdelivered: echo of path %q; want /echo/%s", e.Path, token)
	case !bytes.Equal(got, sent):
		return fmt.Sprintf("misdelivered: echoed body of %d bytes differs from the %d sent", len(got), len(sent))
	}
	return ""
}

func checkSHA(resp *http.Response, body []byte, id, token string, sent []byte) string {
	if s := wantStatus(resp, 200); s != "" {
		return s
	}
	var got struct {
		Len    int    `json:"len"`
		SHA256 string `json:"sha256"`
	}
	if err := json.Unmarshal(body, &got); err != nil {
		return fmt.Sprintf("sha256 body is not JSON: %q", trim(body))
	}
	sum := sha256.Sum256(sent)
	if got.Len != len(sent) || got.SHA256 != hex.EncodeToString(sum[:]) {
		return fmt.Sprintf("misdelivered: digest of %d bytes %s; want %d bytes %x", got.Len, got.SHA256, len(sent), sum)
	}
	return ""
}

func checkStream(resp *http.Response, body []byte, id, token string, sent []byte) string {
	if s := wantStatus(resp, 200); s != "" {
		return s
	}
	var n, size int
	fmt.Sscanf(resp.Request.URL.RawQuery, "n=%d&size=%d", &n, &size)
	var want strings.Builder
	for i := range n {
		want.WriteString(strings.Repeat(string(rune('0'+i%10)), size))
	}
	if string(body) != want.String() {
		return fmt.Sprintf("misdelivered: stream of %d bytes; want %d chunks of %d", len(body), n, size)
	}
	return ""
}

// checkError: the §8.1 error body of the watchdog or the library, for this request.
func checkError(code int, typ string) func(*http.Response, []byte, string, string, []byte) string {
	return func(resp *http.Response, body []byte, id, token string, sent []byte) string {
		if s := wantStatus(resp, code); s != "" {
			return s
		}
		var e struct {
			Type      string `json:"type"`
			RequestID string `json:"request_id"`
		}
		if err := json.Unmarshal(body, &e); err != nil {
			return fmt.Sprintf("error body is not JSON: %q", trim(body))
		}
		if e.RequestID != id {
			return fmt.Sprintf("misdelivered: error for request %q; want %q", e.RequestID, id)
		}
		if e.Type != typ {
			return fmt.Sprintf("error type %q; want %q", e.Type, typ)
		}
		return ""
	}
}
