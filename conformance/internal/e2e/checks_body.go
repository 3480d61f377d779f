package e2e

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"strconv"

	"github.com/afterburn-dev/afterburn/conformance/internal/vectors"
)

// pattern is a deterministic body of n bytes, byte i = i*31+7 mod 256,
// generated as it is read so a large body is never held in memory.
type pattern struct{ off, n int64 }

func (p *pattern) Read(b []byte) (int, error) {
	if p.off >= p.n {
		return 0, io.EOF
	}
	if rem := p.n - p.off; int64(len(b)) > rem {
		b = b[:rem]
	}
	for i := range b {
		b[i] = byte((p.off+int64(i))*31 + 7)
	}
	p.off += int64(len(b))
	return len(b), nil
}

func patternSHA256(n int64) string {
	h := sha256.New()
	io.Copy(h, &pattern{n: n})
	return hex.EncodeToString(h.Sum(nil))
}

func patternBytes(n int64) []byte {
	b, _ := io.ReadAll(&pattern{n: n})
	return b
}

// firstDiff is the first offset where a and b differ.
func firstDiff(a, b []byte) int {
	for i := 0; i < len(a) && i < len(b); i++ {
		if a[i] != b[i] {
			return i
		}
	}
	if len(a) < len(b) {
		return len(a)
	}
	return len(b)
}

func streaming32MiB(t *T) {
	const n = 32 << 20
	pid := t.WD.Pid()
	t.WaitIdle(2)
	before, err := vmHWM(pid)
	if err != nil {
		t.Skipf("cannot read the watchdog's peak RSS: %v", err)
	}
	req := t.NewRequest("POST", "/sha256", &pattern{n: n})
	req.ContentLength = n
	m := t.JSON(t.Do(req), 200)
	if m["len"] != float64(n) || m["sha256"] != patternSHA256(n) {
		t.Fatalf("/sha256 of the 32 MiB body: got %v; want len %d sha256 %s", m, n, patternSHA256(n))
	}
	after, err := vmHWM(pid)
	if err != nil {
		t.Skipf("cannot read the watchdog's peak RSS: %v", err)
	}
	if grew := after - before; grew > 12<<20 {
		t.Fatalf("the watchdog's peak RSS (VmHWM) grew by %.1f MiB (from %.1f to %.1f MiB) for a 32 MiB body; want far less: bodies must stream (§6.1)",
			float64(grew)/(1<<20), float64(before)/(1<<20), float64(after)/(1<<20))
	}
}

func lockstep(t *T) {
	pr, pw := io.Pipe()
	t.Cleanup(func() { pw.Close() })
	req := t.NewRequest("POST", "/lockstep", pr) // unknown length: chunked
	type result struct {
		r   *http.Response
		err error
	}
	got := make(chan result, 1)
	go func() {
		r, err := t.client.Do(req)
		got <- result{r, err}
	}()
	write := func(s string) {
		done := make(chan error, 1)
		go func() { _, err := io.WriteString(pw, s); done <- err }()
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("sending %q on the request body: %v", s, err)
			}
		case <-t.ctx.Done():
			t.Fatalf("sending %q on the request body: the watchdog stopped reading it", s)
		}
	}
	write("one\n")
	var resp *http.Response
	select {
	case res := <-got:
		if res.err != nil {
			t.Fatalf("POST /lockstep: %v", res.err)
		}
		resp = res.r
	case <-t.ctx.Done():
		t.Fatalf("POST /lockstep: no response head after the first line was sent: the first chunk was not flushed, or the request body was not streamed (§6.1)")
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("POST /lockstep: status %d; want 200", resp.StatusCode)
	}
	for i, line := range []string{"one\n", "two\n", "three\n"} {
		if i > 0 {
			write(line)
		}
		buf := make([]byte, len(line))
		if _, err := io.ReadFull(resp.Body, buf); err != nil {
			t.Fatalf("line %d %q: reading its chunk back: %v: the chunk was not flushed before the next line was sent (§6.1, §6.2)", i+1, line, err)
		}
		if string(buf) != line {
			t.Fatalf("line %d: got %q back; want %q", i+1, buf, line)
		}
	}
	pw.Close()
	rest, err := io.ReadAll(resp.Body)
	if err != nil || len(rest) != 0 {
		t.Fatalf("after the body ended: got %q, %v; want the end of the response", rest, err)
	}
}

func fullDuplex4MiB(t *T) {
	var body bytes.Buffer
	line := make([]byte, 1024)
	for i := 0; i < 4096; i++ {
		for j := range line[:1023] {
			line[j] = 'a' + byte((i+j)%26)
		}
		line[1023] = '\n'
		body.Write(line)
	}
	want := body.Bytes()
	r := t.Post("/lockstep", want)
	t.Status(r, 200)
	if !bytes.Equal(r.Body, want) {
		t.Fatalf("/lockstep of 4 MiB: got %d bytes back, first difference at byte %d; want the %d bytes sent",
			len(r.Body), firstDiff(r.Body, want), len(want))
	}
}

func echo4MiB(t *T) {
	body := patternBytes(4 << 20)
	t.matchEcho(t.Post("/echo", body), vectors.Echo{BodyLen: num(4 << 20),
		BodyB64: str(base64.StdEncoding.EncodeToString(body))})
}

// largePattern is /large's body: byte i = i % 251.
func largePattern(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i % 251)
	}
	return b
}

func largeResponse(t *T) {
	const n = 8 << 20
	want := largePattern(n)
	r := t.Get("/large?size=" + strconv.Itoa(n))
	t.Status(r, 200)
	if cl := r.Header.Get("Content-Length"); cl != strconv.Itoa(n) || len(r.TransferEncoding) != 0 {
		t.Fatalf("%s: Content-Length %q, Transfer-Encoding %q; want Content-Length %d", t.lastReq(), cl, r.TransferEncoding, n)
	}
	if !bytes.Equal(r.Body, want) {
		t.Fatalf("%s: got %d bytes, first difference at %d; want %d bytes of i %% 251", t.lastReq(), len(r.Body), firstDiff(r.Body, want), n)
	}
	r = t.Get(fmt.Sprintf("/large?size=%d&chunked=1", n))
	t.Status(r, 200)
	if len(r.TransferEncoding) == 0 {
		t.Fatalf("%s: not chunked\ngot response: %s", t.lastReq(), r)
	}
	if !bytes.Equal(r.Body, want) {
		t.Fatalf("%s: got %d bytes, first difference at %d; want %d bytes of i %% 251", t.lastReq(), len(r.Body), firstDiff(r.Body, want), n)
	}
}

func readPartial(t *T) {
	t.WaitIdle(2)
	before := t.Metrics().Sum("afterburn_worker_restarts_total")
	pids := t.Workers()
	m := t.JSON(t.Post("/read-partial?n=10", patternBytes(1<<20)), 200)
	if m["read"] != 10.0 {
		t.Fatalf("%s: got %v; want read 10", t.lastReq(), m)
	}
	for i := 0; i < 4; i++ {
		t.matchEcho(t.Post("/echo", []byte("next")), vectors.Echo{BodyB64: str(base64.StdEncoding.EncodeToString([]byte("next")))})
	}
	if after := t.Metrics().Sum("afterburn_worker_restarts_total"); after != before {
		t.Fatalf("worker restarts went from %v to %v; want none: the library drains an unread body (§6.3)", before, after)
	}
	if now := t.Workers(); !t.cfg.isolated() && !samePids(pids, now) {
		t.Fatalf("worker processes changed from %v to %v; want the same", pids, now)
	}
}

func samePids(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	set := map[int]bool{}
	for _, p := range a {
		set[p] = true
	}
	for _, p := range b {
		if !set[p] {
			return false
		}
	}
	return true
}
