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
		{"Content-Type": nil, "X-Empty": {}},
		{"X-Spaces": {" padded ", "\tx"}},
		{"X-Newline": {"a\r\nb", "c\nd"}},
		{"Bad Name": {"v"}, "Good": {"v"}},
		{"": {"v"}},
		{"X-Ctl": {"a\x01b"}, "X-Obs": {"caf\xc3\xa9"}},
	} {
		for _, ownClose := range []bool{true, false} {
			var got, want bytes.Buffer
			bw := bufio.NewWriter(&got)
			writeFields(bw, h, ownClose)
			bw.Flush()
			if ownClose {
				h.WriteSubset(&want, ownFields)
			} else {
				h.WriteSubset(&want, ownTE)
			}
			if got.String() != want.String() {
				t.Errorf("header %q, own Connection %v:\nwriteFields wrote %q\nWriteSubset writes %q", h, ownClose, got.String(), want.String())
			}
		}
	}
}
