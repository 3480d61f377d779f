package guard

import (
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/afterburn-dev/afterburn/go/internal/watchdog/obs"
)

// scriptConn is a client connection that delivers its bytes piece bytes
// per Read, then EOF.
type scriptConn struct {
	in    []byte
	piece int
}

func (s *scriptConn) Read(p []byte) (int, error) {
	if len(s.in) == 0 {
		return 0, io.EOF
	}
	n := min(len(p), s.piece, len(s.in))
	copy(p, s.in[:n])
	s.in = s.in[n:]
	return n, nil
}

func (s *scriptConn) Write(p []byte) (int, error)        { return len(p), nil }
func (s *scriptConn) Close() error                       { return nil }
func (s *scriptConn) LocalAddr() net.Addr                { return &net.TCPAddr{} }
func (s *scriptConn) RemoteAddr() net.Addr               { return &net.TCPAddr{} }
func (s *scriptConn) SetDeadline(t time.Time) error      { return nil }
func (s *scriptConn) SetReadDeadline(t time.Time) error  { return nil }
func (s *scriptConn) SetWriteDeadline(t time.Time) error { return nil }

// guardTestHeaderBytes is max_header_bytes in these tests: the head bound
// is 256 + 4096.
const guardTestHeaderBytes = 256

// throughGuard reads everything net/http would read from a guarded
// connection carrying in: the client sends piece bytes at a time, net/http
// asks for readSize bytes per Read. It returns what was read and the error
// that ended it.
func throughGuard(in string, piece, readSize int) (string, error, *Conn) {
	g := New(guardTestHeaderBytes, 0, obs.NewLogger(io.Discard, false))
	sc := &scriptConn{in: []byte(in), piece: piece}
	gc := &Conn{Conn: sc, raw: rawConn(sc), g: g, chk: newChecker(g.maxHead)}
	var out []byte
	p := make([]byte, readSize)
	for {
		n, err := gc.Read(p)
		out = append(out, p[:n]...)
		if err != nil {
			return string(out), err, gc
		}
	}
}

const (
	getA    = "GET /a HTTP/1.1\r\nHost: fn\r\n\r\n"
	postCL  = "POST /b HTTP/1.1\r\nHost: fn\r\nContent-Length: 5\r\n\r\nhello"
	chunked = "POST /c HTTP/1.1\r\nHost: fn\r\nTransfer-Encoding: chunked\r\n\r\n" +
		"5;name=value\r\nhello\r\n6\r\n world\r\n0\r\nX-Checksum: 1\r\n\r\n"
	chunkedHead = "POST /c HTTP/1.1\r\nHost: fn\r\nTransfer-Encoding: chunked\r\n\r\n"
)

// guardCases: released is what net/http must read (all of in when reason
// is nil); for a head offence the guard's synthetic head follows it, for
// a body offence a read error does.
var guardCases = []struct {
	name     string
	in       string
	released string
	reason   *RejectReason
	inBody   bool
}{
	// Accepted.
	{name: "get", in: getA},
	{name: "content-length body", in: postCL},
	{name: "llhttp transfer-encoding.md: chunk extensions and trailing headers", in: chunked},
	{name: "llhttp transfer-encoding.md: lowercase and uppercase chunk sizes", in: chunkedHead + "a\r\n0123456789\r\nA\r\n0123456789\r\n000\r\n\r\n"},
	{name: "RFC 9112 §7.1: 16 hex digits", in: chunkedHead + "000000000000000a\r\n0123456789\r\n0\r\n\r\n"},
	{name: "RFC 9112 §7.1.1: BWS before a chunk extension", in: chunkedHead + "5 ;a=b\r\nhello\r\n0\r\n\r\n"},
	{name: "pipelined keep-alive", in: postCL + getA + chunked + getA},
	{name: "RFC 9112 §2.2: empty line before a request line", in: postCL + "\r\n" + getA},
	{name: "RFC 9110 §5.5: OWS around a Content-Length", in: "POST /b HTTP/1.1\r\nHost: fn\r\ncontent-LENGTH: \t5 \r\n\r\nhello"},
	{name: "llhttp content-length.md: Content-Length with zeroes", in: "PUT /url HTTP/1.1\r\nHost: fn\r\nContent-Length: 003\r\n\r\nabc"},
	{name: "Transfer-Encoding is case-insensitive", in: "POST /c HTTP/1.1\r\nHost: fn\r\nTransfer-Encoding: CHUNKED\r\n\r\n0\r\n\r\n" + getA},
	{name: "HTTP/1.0 with Content-Length", in: "POST /b HTTP/1.0\r\nContent-Length: 5\r\n\r\nhello" + getA},
	{name: "head at the bound", in: "GET / HTTP/1.1\r\nHost: fn\r\nX: " + strings.Repeat("a", guardTestHeaderBytes+headSlack-len("GET / HTTP/1.1\r\nHost: fn\r\nX: \r\n\r\n")) + "\r\n\r\n"},
	{
		// net/http answers 501 and closes; nothing after the head is
		// released (llhttp transfer-encoding.md: "Ignoring pigeons").
		name:     "unknown coding: released up to its head",
		in:       "PUT /url HTTP/1.1\r\nHost: fn\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n" + getA,
		released: "PUT /url HTTP/1.1\r\nHost: fn\r\nTransfer-Encoding: gzip, chunked\r\n\r\n",
	},

	// Rejected heads: RFC 9112 §2.2 (bare LF), §5.2 (obs-fold).
	{name: "RFC 9112 §2.2: bare LF after the request line", in: "GET / HTTP/1.1\nHost: fn\r\n\r\n", reason: ReasonBareLF},
	{name: "RFC 9112 §2.2: bare LF after a field line", in: "GET / HTTP/1.1\r\nHost: fn\n\r\n", reason: ReasonBareLF},
	{name: "RFC 9112 §2.2: bare LF as the empty line", in: "GET / HTTP/1.1\r\nHost: fn\r\n\n", reason: ReasonBareLF},
	{name: "RFC 9112 §2.2: all bare LF", in: "GET / HTTP/1.1\nHost: fn\n\n", reason: ReasonBareLF},
	{name: "RFC 9112 §5.2: obs-fold with SP", in: "GET / HTTP/1.1\r\nHost: fn\r\nX: a\r\n b\r\n\r\n", reason: ReasonObsFold},
	{name: "RFC 9112 §5.2: obs-fold with HT", in: "GET / HTTP/1.1\r\nHost: fn\r\nX: a\r\n\tb\r\n\r\n", reason: ReasonObsFold},
	{name: "RFC 9112 §5.2: whitespace before the first field", in: "GET / HTTP/1.1\r\n Host: fn\r\n\r\n", reason: ReasonObsFold},
	// RFC 9112 §6.1, §11.2; llhttp transfer-encoding.md "POST with
	// Transfer-Encoding and Content-Length".
	{name: "RFC 9112 §6.1: Content-Length then Transfer-Encoding", in: "POST / HTTP/1.1\r\nHost: fn\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", reason: ReasonCLAndTE},
	{name: "RFC 9112 §6.1: Transfer-Encoding then Content-Length", in: "POST / HTTP/1.1\r\nHost: fn\r\nTransfer-Encoding: chunked\r\nContent-Length: 4\r\n\r\n0\r\n\r\n", reason: ReasonCLAndTE},
	{name: "llhttp transfer-encoding.md: empty Transfer-Encoding with Content-Length", in: "POST / HTTP/1.1\r\nHost: fn\r\nTransfer-Encoding:\r\nContent-Length: 5\r\n\r\nhello", reason: ReasonCLAndTE},
	{name: "RFC 9112 §6.1: Transfer-Encoding in HTTP/1.0", in: "POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", reason: ReasonTENotHTTP11},
	// RFC 9112 §6.3 item 5; llhttp content-length.md "Error on duplicate
	// Content-Length" and "Error on Content-Length overflow".
	{name: "llhttp content-length.md: duplicate Content-Length, equal values", in: "POST / HTTP/1.1\r\nHost: fn\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\nhello", reason: ReasonCLRepeated},
	{name: "RFC 9112 §6.3: Content-Length list", in: "POST / HTTP/1.1\r\nHost: fn\r\nContent-Length: 5, 5\r\n\r\nhello", reason: ReasonCLNotDigits},
	{name: "HTTP Garden: Content-Length +5", in: "POST / HTTP/1.1\r\nHost: fn\r\nContent-Length: +5\r\n\r\nhello", reason: ReasonCLNotDigits},
	{name: "HTTP Garden: Content-Length -1", in: "POST / HTTP/1.1\r\nHost: fn\r\nContent-Length: -1\r\n\r\n", reason: ReasonCLNotDigits},
	{name: "HTTP Garden: Content-Length with inner space", in: "POST / HTTP/1.1\r\nHost: fn\r\nContent-Length:  5 5\r\n\r\nhello", reason: ReasonCLNotDigits},
	{name: "RFC 9110 §8.6: empty Content-Length", in: "POST / HTTP/1.1\r\nHost: fn\r\nContent-Length:\r\n\r\n", reason: ReasonCLNotDigits},
	{name: "RFC 9110 §8.6: hex Content-Length", in: "POST / HTTP/1.1\r\nHost: fn\r\nContent-Length: 0x5\r\n\r\nhello", reason: ReasonCLNotDigits},
	{name: "llhttp content-length.md: Content-Length overflow", in: "PUT /url HTTP/1.1\r\nHost: fn\r\nContent-Length: 1000000000000000000000\r\n\r\n", reason: ReasonCLNotDigits},
	{name: "PROTOCOL.md §4.3 rule 6: Content-Length of 2^63", in: "PUT /url HTTP/1.1\r\nHost: fn\r\nContent-Length: 9223372036854775808\r\n\r\n", reason: ReasonCLNotDigits},
	{name: "PROTOCOL.md §10.5: head one byte past the bound", in: "GET / HTTP/1.1\r\nHost: fn\r\nX: " + strings.Repeat("a", guardTestHeaderBytes+headSlack-len("GET / HTTP/1.1\r\nHost: fn\r\nX: \r\n\r\n")+1) + "\r\n\r\n", reason: ReasonHeadTooLarge},
	{name: "PROTOCOL.md §10.5: endless head", in: "GET / HTTP/1.1\r\nX: " + strings.Repeat("a", 3*(guardTestHeaderBytes+headSlack)), reason: ReasonHeadTooLarge},
	{name: "pipelined: valid, then bare LF", in: getA + postCL + "GET /bad HTTP/1.1\nHost: fn\n\n" + getA, released: getA + postCL, reason: ReasonBareLF},
	{name: "pipelined: valid chunked, then Content-Length with Transfer-Encoding", in: chunked + "POST / HTTP/1.1\r\nHost: fn\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n", released: chunked, reason: ReasonCLAndTE},

	// Rejected bodies: RFC 9112 §7.1.
	{name: "llhttp transfer-encoding.md: no semicolon before chunk extensions", in: chunkedHead + "2 erfrferferf\r\naa\r\n0\r\n\r\n", released: chunkedHead, reason: ReasonChunkSize, inBody: true},
	{name: "HTTP Garden: chunk size with 0x", in: chunkedHead + "0x5\r\nhello\r\n0\r\n\r\n", released: chunkedHead, reason: ReasonChunkSize, inBody: true},
	{name: "HTTP Garden: chunk size with +", in: chunkedHead + "+5\r\nhello\r\n0\r\n\r\n", released: chunkedHead, reason: ReasonChunkSize, inBody: true},
	{name: "HTTP Garden: whitespace before a chunk size", in: chunkedHead + " 5\r\nhello\r\n0\r\n\r\n", released: chunkedHead, reason: ReasonChunkSize, inBody: true},
	{name: "RFC 9112 §7.1: whitespace after a chunk size without extension", in: chunkedHead + "5 \r\nhello\r\n0\r\n\r\n", released: chunkedHead, reason: ReasonChunkSize, inBody: true},
	{name: "RFC 9112 §7.1: empty chunk-size line", in: chunkedHead + "\r\n", released: chunkedHead, reason: ReasonChunkSize, inBody: true},
	{name: "RFC 9112 §7.1: non-hex chunk size", in: chunkedHead + "zz\r\n", released: chunkedHead, reason: ReasonChunkSize, inBody: true},
	{name: "PROTOCOL.md §4.3 rule 9: 17 hex digits", in: chunkedHead + "0000000000000000a\r\n0123456789\r\n0\r\n\r\n", released: chunkedHead, reason: ReasonChunkSize, inBody: true},
	{name: "RFC 9112 §7.1.1: control byte in a chunk extension", in: chunkedHead + "5;a\x01\r\nhello\r\n0\r\n\r\n", released: chunkedHead, reason: ReasonChunkSize, inBody: true},
	{name: "net/http's chunked reader: chunk-size line past 4096 bytes", in: chunkedHead + "5;" + strings.Repeat("e", maxChunkLine), released: chunkedHead, reason: ReasonChunkSize, inBody: true},
	{name: "RFC 9112 §2.2: bare LF after a chunk size", in: chunkedHead + "5\nhello\r\n0\r\n\r\n", released: chunkedHead, reason: ReasonBareLF, inBody: true},
	{name: "HTTP Garden: chunk data not followed by CRLF", in: chunkedHead + "5\r\nhelloXX0\r\n\r\n", released: chunkedHead + "5\r\nhello", reason: ReasonChunkCRLF, inBody: true},
	{name: "HTTP Garden: chunk data followed by bare LF", in: chunkedHead + "5\r\nhello\n0\r\n\r\n", released: chunkedHead + "5\r\nhello", reason: ReasonChunkCRLF, inBody: true},
	{name: "RFC 9112 §7.1.2: obs-fold in a trailer", in: chunkedHead + "0\r\nX: a\r\n b\r\n\r\n", released: chunkedHead + "0\r\nX: a\r\n", reason: ReasonObsFold, inBody: true},
	{name: "RFC 9112 §2.2: bare LF ending trailers", in: chunkedHead + "0\r\nX: a\r\n\n", released: chunkedHead + "0\r\nX: a\r\n", reason: ReasonBareLF, inBody: true},
	{name: "PROTOCOL.md §4.3 rule 9: trailer section past the bound", in: chunkedHead + "0\r\nX: " + strings.Repeat("t", guardTestHeaderBytes+headSlack), released: chunkedHead + "0\r\n", reason: reasonTrailerLarge, inBody: true},
	{name: "pipelined: valid, then a bad chunk in the next body", in: getA + chunkedHead + "5\r\nhello\r\nq\r\n", released: getA + chunkedHead + "5\r\nhello\r\n", reason: ReasonChunkSize, inBody: true},
}

// TestGuardChecker feeds each case to a guarded connection all at once,
// byte by byte and in 7-byte pieces, read by net/http-sized reads and by
// the 1-byte reads of net/http's background read.
func TestGuardChecker(t *testing.T) {
	for _, tc := range guardCases {
		for _, piece := range []int{len(tc.in), 1, 7} {
			for _, readSize := range []int{4096, 1} {
				out, err, gc := throughGuard(tc.in, piece, readSize)
				where := func() string { return fmt.Sprintf("%s (pieces of %d, reads of %d)", tc.name, piece, readSize) }
				rej := gc.Rej.Load()
				if tc.reason == nil {
					want := tc.in
					if tc.released != "" {
						want = tc.released
					}
					if rej != nil {
						t.Errorf("%s: rejected: %s; want accepted", where(), rej.Text)
					} else if out != want || err != io.EOF {
						t.Errorf("%s: got %q, %v; want %q, EOF", where(), out, err, want)
					}
					continue
				}
				if rej == nil {
					t.Errorf("%s: accepted, read %q; want rejected: %s", where(), out, tc.reason.Text)
					continue
				}
				if rej.RejectReason != tc.reason || rej.InBody != tc.inBody {
					t.Errorf("%s: got %q (in body %v); want %q (in body %v)", where(), rej.Text, rej.InBody, tc.reason.Text, tc.inBody)
				}
				want := tc.released + string(gc.g.synthetic)
				if tc.inBody {
					want = tc.released
				}
				if out != want {
					t.Errorf("%s: net/http read %q; want %q", where(), out, want)
				}
				switch {
				case tc.inBody && !errors.Is(err, errBodyFraming):
					t.Errorf("%s: ended with %v; want %v", where(), err, errBodyFraming)
				case !tc.inBody && err != io.EOF:
					t.Errorf("%s: ended with %v; want EOF after the synthetic head", where(), err)
				}
			}
		}
	}
}

// TestGuardRejectionAccessParts: the access-log line of a rejected head
// names its method and path when they are plain, "-" otherwise (§9.5).
func TestGuardRejectionAccessParts(t *testing.T) {
	for _, tc := range []struct {
		in, method, path string
	}{
		{"POST /a/b?secret=1 HTTP/1.1\r\nContent-Length: +1\r\n\r\n", "POST", "/a/b"},
		{"GET /x HTTP/1.1\nHost: fn\n\n", "GET", "/x"},
		{"GET /\x1b[31m HTTP/1.1\r\n X: y\r\n\r\n", "GET", "-"},
	} {
		_, _, gc := throughGuard(tc.in, len(tc.in), 4096)
		rej := gc.Rej.Load()
		if rej == nil || rej.Method != tc.method || rej.Path != tc.path {
			t.Errorf("%q: got %+v; want method %q, path %q", tc.in, rej, tc.method, tc.path)
		}
	}
}

// TestGuardNoAllocation: PROTOCOL.md §10.5 must not slow the hot path: a
// keep-alive request costs the checker no allocation.
func TestGuardNoAllocation(t *testing.T) {
	in := []byte(postCL + chunked)
	c := newChecker(32768 + headSlack)
	allocs := testing.AllocsPerRun(100, func() {
		b := in
		for len(b) > 0 {
			n, why := c.scan(b)
			if why != nil || n == 0 {
				t.Fatalf("scan stopped at %q: %v", b, why)
			}
			b = b[n:]
		}
	})
	if allocs != 0 {
		t.Errorf("got %v allocations per request; want 0", allocs)
	}
}

// TestGuardConnNoAllocation: a keep-alive request through a guarded
// connection takes its buffer from the pool and gives it back, so it costs
// no allocation either (§10.5).
func TestGuardConnNoAllocation(t *testing.T) {
	g := New(32768, 0, obs.NewLogger(io.Discard, false))
	sc := &scriptConn{piece: 1 << 20}
	gc := &Conn{Conn: sc, raw: rawConn(sc), g: g, chk: newChecker(g.maxHead)}
	p := make([]byte, 4096)
	in := []byte(postCL)
	allocs := testing.AllocsPerRun(100, func() {
		sc.in = in
		got := 0
		for got < len(in) {
			n, err := gc.Read(p)
			if err != nil {
				t.Fatalf("read %d of %d bytes: %v", got, len(in), err)
			}
			got += n
		}
	})
	if allocs >= 1 {
		t.Errorf("got %v allocations per request; want none", allocs)
	}
}

// BenchmarkGuardHead is the checker's cost for a typical request head.
func BenchmarkGuardHead(b *testing.B) {
	head := []byte("GET /function/echo?x=1 HTTP/1.1\r\nHost: gateway.example:8080\r\nUser-Agent: Go-http-client/1.1\r\n" +
		"Accept: application/json\r\nAccept-Encoding: gzip\r\nX-Request-Id: 6f1c0a4e2b9d4c1f8a7e5d3c2b1a0f9e\r\n" +
		"Content-Length: 0\r\n\r\n")
	c := newChecker(32768 + headSlack)
	b.SetBytes(int64(len(head)))
	b.ReportAllocs()
	for b.Loop() {
		if n, why := c.scan(head); n != len(head) || why != nil {
			b.Fatalf("got %d, %v", n, why)
		}
	}
}
