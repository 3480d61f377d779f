package front

import (
	"bufio"
	"bytes"
	"net/http"
	"testing"
)

// writeFields writes what net/http's WriteSubset writes, for plain fields
// and for every kind it must hand to WriteSubset.
func TestWriteFieldsAsNetHTTP(t *testing.T) {
	for _, h := range []http.Header{
		{},
		{"Content-Type": {"text/plain"}, "Content-Length": {"5"}, "Date": {"Mon, 02 Jan 2006 15:04:05 GMT"}},
		{"X-Multi": {"a", "b", ""}, "A": {"1"}, "Z-Last": {"z"}, "Connection": {"close"}, "Transfer-Encoding": {"chunked"}},
		{"Content-Length": {"0"}, "Content-Type": {"text/plain"}, "X-Other": {"1"}},
		{"Content-Type": nil, "X-Empty": {}},
		{"X-Spaces": {" padded ", "\tx"}},
		{"X-Newline": {"a\r\nb", "c\nd"}},
		{"Bad Name": {"v"}, "Good": {"v"}},
		{"": {"v"}},
		{"X-Ctl": {"a\x01b"}, "X-Obs": {"caf\xc3\xa9"}},
	} {
		for omit := range omitAll {
			var got, want bytes.Buffer
			bw := bufio.NewWriter(&got)
			writeFields(bw, h, omit)
			bw.Flush()
			h.WriteSubset(&want, omitMaps[omit])
			if got.String() != want.String() {
				t.Errorf("header %q, omitting %v:\nwriteFields wrote %q\nWriteSubset writes %q", h, omitMaps[omit], got.String(), want.String())
			}
		}
	}
}

// The fields net/http adds or drops for a status or a Connection field the
// handler set (head.go) come out the same from the front: close among other
// words keeps the connection, 304 and 204 lose Content-Length (304 its
// Content-Type too).
func TestFrontHeadsAsNetHTTP(t *testing.T) {
	stream := "GET /ux HTTP/1.1\r\nHost: a\r\n\r\n" +
		"GET /un HTTP/1.1\r\nHost: a\r\n\r\n" +
		"GET /uz HTTP/1.1\r\nHost: a\r\n\r\n" +
		"GET /u HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n"
	got, out, took := compare(t, testGuard(), []byte(stream))
	if len(got) != 4 || took != 4 {
		t.Errorf("%d requests answered, %d by the front; want 4 by the front:\n%q", len(got), took, out)
	}
}
