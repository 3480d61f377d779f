package wire

import (
	"bufio"
	"net/http"
	"strings"
	"testing"
)

// HeadSize counts every line of a head net/http parsed (PROTOCOL.md §7.1),
// the Trailer field of a chunked request too, which net/http takes out of
// r.Header: a head of names there, within max_header_bytes by this count,
// passed the watchdog's check while the head it wrote to the worker grew
// by those names, past the 1024 bytes §7.3 allows (FuzzRequestWrite).
func TestHeadSize(t *testing.T) {
	long := strings.Repeat("n", 900)
	for _, tc := range []struct{ name, head string }{
		{"fields", "GET /a?b HTTP/1.1\r\nHost: fn\r\nX-One: 1\r\nX-Two: 2\r\nX-Two: 3\r\n\r\n"},
		{"chunked", "POST / HTTP/1.1\r\nHost: fn\r\nTransfer-Encoding: chunked\r\n\r\n"},
		{"chunked, a trailer", "POST / HTTP/1.1\r\nHost: fn\r\nTransfer-Encoding: chunked\r\nTrailer: X-Sum\r\n\r\n"},
		{"chunked, a long trailer", "POST / HTTP/1.1\r\nHost: fn\r\nTransfer-Encoding: chunked\r\nTrailer: " + long + "\r\n\r\n"},
		{"chunked, several", "POST / HTTP/1.1\r\nHost: fn\r\nTransfer-Encoding: chunked\r\nTrailer: X-A, X-Bb\r\nTrailer: X-Ccc\r\n\r\n"},
		{"a trailer without chunks", "POST / HTTP/1.1\r\nHost: fn\r\nContent-Length: 0\r\nTrailer: X-Sum\r\n\r\n"},
	} {
		r, err := http.ReadRequest(bufio.NewReader(strings.NewReader(tc.head)))
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		// The field lines net/http canonicalizes and joins count as they are
		// written back: "Trailer: X-A, X-Bb, X-Ccc" for two lines of them.
		want := len(tc.head) - 2
		if tc.name == "chunked, several" {
			want = len(strings.Replace(tc.head, "X-Bb\r\nTrailer: X-Ccc", "X-Bb, X-Ccc", 1)) - 2
		}
		if got := HeadSize(r); got != want {
			t.Errorf("%s: HeadSize = %d; want %d", tc.name, got, want)
		}
	}
}
