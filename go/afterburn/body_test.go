package afterburn

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"testing/iotest"
)

// io.Copy(w, r.Body) goes through body.WriteTo: the echo is the body, byte for byte,
// whatever the framing and however the pipe splits it, and the request after it is
// read from where the body ended.
func TestBodyWriteTo(t *testing.T) {
	big := make([]byte, 3*copyBufferSize+12345)
	for i := range big {
		big[i] = byte(i % 251)
	}
	chunked := func(pieces ...[]byte) string {
		var b strings.Builder
		for _, p := range pieces {
			fmt.Fprintf(&b, "%x\r\n%s\r\n", len(p), p)
		}
		return b.String() + "0\r\n\r\n"
	}
	echo := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength >= 0 {
			w.Header().Set("Content-Length", strconv.FormatInt(r.ContentLength, 10))
		}
		if _, err := io.Copy(w, r.Body); err != nil {
			t.Errorf("io.Copy: %v", err)
		}
	})
	for _, tc := range []struct {
		name, framing, body string
		want                []byte
	}{
		{"content-length", "Content-Length: " + strconv.Itoa(len(big)), string(big), big},
		{"chunked", "Transfer-Encoding: chunked", chunked(big[:10], big[10:copyBufferSize+20], big[copyBufferSize+20:]), big},
		{"empty", "Content-Length: 0", "", nil},
	} {
		for _, split := range []struct {
			name string
			r    func(io.Reader) io.Reader
		}{
			{"whole", func(r io.Reader) io.Reader { return r }},
			{"halves", iotest.HalfReader},
			{"bytes", iotest.OneByteReader},
		} {
			if split.name == "bytes" && len(tc.want) > 0 && tc.framing[0] == 'T' {
				continue // slow and adds nothing to the halves
			}
			t.Run(tc.name+"/"+split.name, func(t *testing.T) {
				in := "POST /echo HTTP/1.1\r\nHost: fn\r\n" + tc.framing + "\r\n\r\n" + tc.body + get
				var out bytes.Buffer
				c := newConn(split.r(strings.NewReader(in)), &out, defaultLimits)
				if err := c.serve(echo); err != nil {
					t.Fatal(err)
				}
				rs := readResponses(t, out.String())
				if len(rs) != 2 || rs[0].StatusCode != 200 || !bytes.Equal(rs[0].body, tc.want) || rs[1].StatusCode != 200 {
					t.Fatalf("got %d responses; want the echo of %d bytes, then the GET's", len(rs), len(tc.want))
				}
			})
		}
	}
}

func TestBodyWriteToErrors(t *testing.T) {
	t.Run("truncated body", func(t *testing.T) {
		var copyErr error
		_, _, err := serveString(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, copyErr = io.Copy(io.Discard, r.Body)
		}), "POST /a HTTP/1.1\r\nHost: fn\r\nContent-Length: 10\r\n\r\nabc")
		var perr *protocolError
		if !errors.As(copyErr, &perr) || err == nil {
			t.Errorf("io.Copy of a truncated body: %v, serve: %v; want a protocol error for both", copyErr, err)
		}
	})
	t.Run("after Close", func(t *testing.T) {
		var copyErr error
		serveString(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			r.Body.Close()
			_, copyErr = io.Copy(io.Discard, r.Body)
		}), "POST /a HTTP/1.1\r\nHost: fn\r\nContent-Length: 3\r\n\r\nabc")
		if copyErr != http.ErrBodyReadAfterClose {
			t.Errorf("io.Copy after Close: %v; want %v", copyErr, http.ErrBodyReadAfterClose)
		}
	})
	t.Run("write error", func(t *testing.T) {
		boom := errors.New("boom")
		var copyErr error
		var n int64
		serveString(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			n, copyErr = io.Copy(failingWriter{boom}, r.Body)
		}), "POST /a HTTP/1.1\r\nHost: fn\r\nContent-Length: 3\r\n\r\nabc")
		if copyErr != boom || n != 0 {
			t.Errorf("io.Copy into a failing writer: %d, %v; want 0, %v", n, copyErr, boom)
		}
	})
}

type failingWriter struct{ err error }

func (f failingWriter) Write(p []byte) (int, error) { return 0, f.err }
