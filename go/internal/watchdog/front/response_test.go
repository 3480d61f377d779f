package front

import (
	"bufio"
	"bytes"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/afterburn-dev/afterburn/go/internal/watchdog/wire"
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

// WriteWorkerHead writes, from a worker's head, the bytes WriteHeader
// writes once the exchange has copied the same head into Header (its
// forwarded fields, the request id, Content-Length, Date): for requests of
// every kind the head's fate depends on, and heads with fields that are
// dropped, repeated, or sorted among the added ones.
func TestWorkerHeadAsHeader(t *testing.T) {
	requests := []string{
		"GET / HTTP/1.1\r\nHost: a\r\n\r\n",
		"HEAD / HTTP/1.1\r\nHost: a\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: a\r\nConnection: x close\r\n\r\n",
		"GET / HTTP/1.0\r\nHost: a\r\n\r\n",
		"GET / HTTP/1.0\r\nHost: a\r\nConnection: keep-alive\r\n\r\n",
	}
	heads := []string{
		"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 5\r\n\r\n",
		"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n",
		"HTTP/1.1 404 Not Found\r\nX-Zeta: 1\r\nx-alpha: 2\r\nX-Zeta: 3\r\nContent-Length: 007\r\nDate: Mon, 02 Jan 2006 15:04:05 GMT\r\n\r\n",
		"HTTP/1.1 200 OK\r\nConnection: close, X-Hop\r\nX-Hop: gone\r\nKeep-Alive: 5\r\nAfterBurn-Error: bad\r\nAfterBurn-Exchange: t\r\nContent-Length: 2\r\n\r\n",
		"HTTP/1.1 204 No Content\r\nContent-Length: 0\r\nX-A: a\r\n\r\n",
		"HTTP/1.1 304 Not Modified\r\nContent-Length: 5\r\nContent-Type: text/plain\r\nEtag: \"x\"\r\n\r\n",
		"HTTP/1.0 200 OK\r\nContent-Length: 1\r\n\r\n",
		"HTTP/1.1 299 Whatever\r\nContent-Length: 1\r\nTrailer: X-T\r\n\r\n",
	}
	date := "Sun, 29 Nov 2026 09:00:00 GMT"
	for _, rawReq := range requests {
		for _, rawHead := range heads {
			for _, closing := range []bool{false, true} {
				req, err := http.ReadRequest(bufio.NewReader(strings.NewReader(rawReq)))
				if err != nil {
					t.Fatal(err)
				}
				var head wire.RespHead
				if err := head.Read(bufio.NewReader(strings.NewReader(rawHead))); err != nil {
					t.Fatalf("%q: %v", rawHead, err)
				}
				id := wire.RespField{Name: "AfterBurn-Request-Id", Value: "0123abcd"}
				length := wire.RespField{Name: "Content-Length", Value: head.LengthValue()}
				extra := []wire.RespField{id, length}
				if !head.Has("Date") {
					extra = append(extra, wire.RespField{Name: "Date", Value: date})
				}

				fast, fastOut := testResponse(req, closing)
				if !fast.WriteWorkerHead(&head, extra) {
					t.Fatalf("%q to %q: WriteWorkerHead refused", rawHead, rawReq)
				}
				slow, slowOut := testResponse(req, closing)
				h := slow.Header()
				head.CopyFields(h, extra...)
				if _, ok := h["Content-Type"]; !ok {
					h["Content-Type"] = nil // as the exchange's fillHeader: no sniffing
				}
				slow.WriteHeader(head.Status)
				fast.c.bw.Flush()
				slow.c.bw.Flush()
				if fastOut.String() != slowOut.String() || fast.closeAfter != slow.closeAfter || fast.left != slow.left || fast.bodyless != slow.bodyless {
					t.Errorf("%q to %q (closing %v):\nWriteWorkerHead %q (close %v, left %d)\nWriteHeader     %q (close %v, left %d)",
						rawHead, rawReq, closing, fastOut.String(), fast.closeAfter, fast.left, slowOut.String(), slow.closeAfter, slow.left)
				}
			}
		}
	}
	// Once Header holds a field, or a head went out, it leaves the head to
	// the caller.
	req, _ := http.ReadRequest(bufio.NewReader(strings.NewReader(requests[0])))
	var head wire.RespHead
	head.Read(bufio.NewReader(strings.NewReader(heads[0])))
	w, out := testResponse(req, false)
	w.Header().Set("Connection", "close")
	if w.WriteWorkerHead(&head, nil) || out.Len() > 0 {
		t.Error("WriteWorkerHead wrote a head over a Header that holds a field")
	}
	w, _ = testResponse(req, false)
	w.WriteHeader(200)
	if w.WriteWorkerHead(&head, nil) {
		t.Error("WriteWorkerHead wrote a second head")
	}
}

// testResponse is a front response to req writing to the buffer returned.
func testResponse(req *http.Request, closing bool) (*response, *bytes.Buffer) {
	out := new(bytes.Buffer)
	c := &conn{srv: &Server{}, bw: bufio.NewWriter(out)}
	c.srv.closing.Store(closing)
	c.watch = &clientWatch{c: c}
	w := &response{}
	w.reset(c, req, time.Now())
	return w, out
}
