package watchdog

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/afterburn-dev/afterburn/go/internal/watchdog/config"
	"github.com/afterburn-dev/afterburn/go/internal/watchdog/wire"
)

// TestTrailersBothWays: PROTOCOL.md §6.7. A chunked request's trailers reach
// the worker, and its Trailer field the names it declared; a chunked
// response's trailers reach an HTTP/1.1 client with the Trailer field; fields
// that must not be trailers are dropped both ways; an HTTP/1.0 client gets
// neither trailers nor the Trailer field. With response buffering on and off.
func TestTrailersBothWays(t *testing.T) {
	t.Parallel()
	const request = "POST /trailers HTTP/1.1\r\nHost: x\r\nConnection: close\r\nTransfer-Encoding: chunked\r\n" +
		"Trailer: X-Checksum, X-Declared\r\n\r\n" +
		"5\r\nhello\r\n0\r\nX-Checksum: abc\r\nX-Checksum: def\r\nHost: evil\r\nContent-Length: 99\r\n" +
		"Content-Type: text/evil\r\nAuthorization: Basic evil\r\nAfterBurn-Exchange: forged\r\n\r\n"
	for _, buffering := range []bool{true, false} {
		h := start(t, func(c *config.Config) { c.ResponseBuffering = buffering })
		raw := rawExchange(t, h, request)
		resp, err := http.ReadResponse(bufio.NewReader(strings.NewReader(raw)), nil)
		if err != nil {
			t.Fatalf("buffering %v: %v in %q", buffering, err, raw)
		}
		b, _ := io.ReadAll(resp.Body)
		if body := string(b); resp.StatusCode != 200 || body != "hello" {
			t.Fatalf("buffering %v: got %d %q", buffering, resp.StatusCode, body)
		}
		wantTrailers := http.Header{
			"X-Got-Checksum": {"abc"},
			"X-Got-Trailers": {"X-Checksum=abc X-Checksum=def"},
			"X-Got-Declared": {"X-Declared"},
		}
		if !equalHeader(resp.Trailer, wantTrailers) {
			t.Errorf("buffering %v: trailers %v; want %v (§6.7: no Host, Content-*, Authorization or AfterBurn-* either way)", buffering, resp.Trailer, wantTrailers)
		}
		if !strings.Contains(raw, "\r\nTrailer: X-Got-Checksum, X-Got-Trailers\r\n") {
			t.Errorf("buffering %v: got %q; want the worker's Trailer field (§5.4, §6.7)", buffering, raw)
		}
	}

	// HTTP/1.0: no chunks, so no trailers and no Trailer field announcing them.
	raw := rawExchange(t, start(t, nil), "GET /trailers HTTP/1.0\r\nHost: x\r\n\r\n")
	head, rest, _ := strings.Cut(raw, "\r\n\r\n")
	if strings.Contains(strings.ToLower(head), "\r\ntrailer:") || strings.Contains(rest, "X-Got") || rest != "" {
		t.Errorf("an HTTP/1.0 client got %q; want no Trailer field, no trailers and the empty body", raw)
	}
}

// TestTrailerDeclaredAndInHead: §6.7 — a field the worker sent in its head
// and declared in its Trailer field reaches the client in the head, and as a
// trailer only with the value of the worker's trailer section, if it has one:
// net/http would otherwise send the head's value again as a trailer.
func TestTrailerDeclaredAndInHead(t *testing.T) {
	t.Parallel()
	for _, buffering := range []bool{true, false} {
		h := start(t, func(c *config.Config) { c.ResponseBuffering = buffering })
		raw := rawExchange(t, h, "GET /trailer-in-head HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
		resp, err := http.ReadResponse(bufio.NewReader(strings.NewReader(raw)), nil)
		if err != nil {
			t.Fatalf("buffering %v: %v in %q", buffering, err, raw)
		}
		if b, _ := io.ReadAll(resp.Body); string(b) != "ok" {
			t.Fatalf("buffering %v: body %q", buffering, b)
		}
		if resp.Header.Get("X-Both") != "head" || resp.Header.Get("X-Head-Only") != "head" {
			t.Errorf("buffering %v: head %v; want X-Both and X-Head-Only: head", buffering, resp.Header)
		}
		if want := (http.Header{"X-Both": {"tail"}}); !equalHeader(resp.Trailer, want) {
			t.Errorf("buffering %v: trailers %v; want %v, the head's values not sent again\n%q", buffering, resp.Trailer, want, raw)
		}
	}
}

// equalHeader compares two headers, ignoring keys with no values.
func equalHeader(a, b http.Header) bool {
	n := 0
	for k, vv := range a {
		if len(vv) == 0 {
			continue
		}
		n++
		if !slices.Equal(vv, b[k]) {
			return false
		}
	}
	return n == len(b)
}

func TestTrailerAllowed(t *testing.T) {
	for name, want := range map[string]bool{
		"X-Checksum": true, "Server-Timing": true, "Digest": true,
		"Content-Length": false, "Content-Type": false, "Content-Md5": false, "Transfer-Encoding": false,
		"Host": false, "Trailer": false, "Authorization": false, "Set-Cookie": false, "Te": false,
		"Connection": false, "Afterburn-Error": false, "Afterburn-Request-Id": false,
	} {
		if got := wire.TrailerAllowed(name); got != want {
			t.Errorf("trailerAllowed(%q) = %v; want %v", name, got, want)
		}
	}
}

// rawExchange sends request, which ends the connection after its response,
// and returns every byte the client got.
func rawExchange(t *testing.T, h *harness, request string) string {
	t.Helper()
	c, err := net.Dial("tcp", h.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(waitLimit))
	io.WriteString(c, request)
	raw, err := io.ReadAll(c)
	if err != nil {
		t.Fatalf("reading the response to %q: %v", request, err)
	}
	return string(raw)
}
