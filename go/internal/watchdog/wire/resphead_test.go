package wire

import (
	"bufio"
	"errors"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"testing/iotest"
)

// headReaders gives the same bytes as one buffered block (readBlock's fast path) and one
// byte per read through a small buffer (its line-by-line path, lines longer than the buffer).
func headReaders(s string) map[string]*bufio.Reader {
	return map[string]*bufio.Reader{
		"whole":    bufio.NewReaderSize(strings.NewReader(s), 1<<16),
		"bytewise": bufio.NewReaderSize(iotest.OneByteReader(strings.NewReader(s)), 16),
	}
}

// TestResponseHeadParses: heads §4.4 allows, read as net/http's reader reads them, with the
// body framing, Connection and the exchange token picked out.
func TestResponseHeadParses(t *testing.T) {
	for _, c := range []struct {
		name, in string
		status   int
		length   int64
		chunked  bool
		close    bool
		conn     []string
		fields   []RespField
		body     string
		trailers []RespField
	}{
		{name: "length", in: "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 5\r\n\r\nhello",
			status: 200, length: 5, fields: []RespField{{"Content-Type", "text/plain"}, {"Content-Length", "5"}}, body: "hello"},
		{name: "names canonical, values trimmed", in: "HTTP/1.1 201 Created\r\ncontent-type:  a b \t\r\nAfterBurn-Exchange: 7z\r\nx-a_b: 1\r\nContent-Length: 0\r\n\r\n",
			status: 201, length: 0, fields: []RespField{{"Content-Type", "a b"}, {ExchangeField, "7z"}, {"X-A_b", "1"}, {"Content-Length", "0"}}},
		{name: "no reason, no space", in: "HTTP/1.1 204\r\n\r\n", status: 204, length: -1},
		{name: "empty reason", in: "HTTP/1.1 304 \r\nContent-Length: 12\r\n\r\n", status: 304, length: 12,
			fields: []RespField{{"Content-Length", "12"}}},
		{name: "HTTP/1.0 closes", in: "HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n", status: 200, length: 0, close: true,
			fields: []RespField{{"Content-Length", "0"}}},
		{name: "HTTP/1.0 keep-alive", in: "HTTP/1.0 200 OK\r\nConnection: Keep-Alive\r\nContent-Length: 0\r\n\r\n", status: 200, length: 0,
			fields: []RespField{{"Connection", "Keep-Alive"}, {"Content-Length", "0"}}},
		{name: "Connection names fields", in: "HTTP/1.1 200 OK\r\nConnection: close, x-hop\r\nX-Hop: 1\r\nContent-Length: 0\r\n\r\n",
			status: 200, length: 0, close: true, conn: []string{"X-Hop"},
			fields: []RespField{{"Connection", "close, x-hop"}, {"X-Hop", "1"}, {"Content-Length", "0"}}},
		{name: "chunked with trailers", in: "HTTP/1.1 200 OK\r\nTransfer-Encoding: Chunked\r\nTrailer: X-T\r\n\r\n5;ext=1\r\nhello\r\n1\r\n!\r\n0\r\nx-t: 1\r\nX-U: 2\r\n\r\n",
			status: 200, length: -1, chunked: true, fields: []RespField{{"Transfer-Encoding", "Chunked"}, {"Trailer", "X-T"}},
			body: "hello!", trailers: []RespField{{"X-T", "1"}, {"X-U", "2"}}},
		{name: "chunked, no trailers", in: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
			status: 200, length: -1, chunked: true, fields: []RespField{{"Transfer-Encoding", "chunked"}}, body: "abc"},
	} {
		for how, br := range headReaders(c.in) {
			var h RespHead
			if err := h.Read(br); err != nil {
				t.Fatalf("%s (%s): %v", c.name, how, err)
			}
			if h.Status != c.status || h.Length != c.length || h.Chunked != c.chunked || h.Close != c.close ||
				!slices.Equal(h.conn, c.conn) || !slices.Equal(h.fields, c.fields) {
				t.Fatalf("%s (%s): status %d length %d chunked %v close %v conn %q fields %q", c.name, how,
					h.Status, h.Length, h.Chunked, h.Close, h.conn, h.fields)
			}
			var b RespBody
			b.Begin(br, &h)
			body, err := io.ReadAll(&b)
			if !h.HasBody(http.MethodGet) {
				body, err = nil, nil
			}
			if err != nil || string(body) != c.body || !slices.Equal(h.Trailers, c.trailers) {
				t.Fatalf("%s (%s): body %q (%v), trailers %q", c.name, how, body, err, h.Trailers)
			}
			if rest, _ := io.ReadAll(br); len(rest) > 0 {
				t.Fatalf("%s (%s): %q left unread after the response", c.name, how, rest)
			}
		}
		// The same view as net/http's reader, which the watchdog used before (it takes
		// the framing, Connection and Trailer out of the header).
		q, err := http.ReadResponse(bufio.NewReader(strings.NewReader(c.in)), &http.Request{Method: http.MethodGet})
		if err != nil || q.StatusCode != c.status {
			t.Fatalf("%s: net/http reads %v, %v", c.name, q, err)
		}
		for _, f := range c.fields {
			if !slices.Contains(q.Header[f.Name], f.Value) && !slices.Contains([]string{"Transfer-Encoding", "Content-Length", "Connection", "Trailer"}, f.Name) {
				t.Errorf("%s: net/http has %s %q; this reader %q", c.name, f.Name, q.Header[f.Name], f.Value)
			}
		}
	}
}

// TestResponseHeadMalformed: what §4.4 does not allow is errMalformedResponse, which
// classify makes bad_response (§8.5), whichever way the bytes arrive.
func TestResponseHeadMalformed(t *testing.T) {
	const ok = "Content-Length: 0\r\n\r\n"
	for name, in := range map[string]string{
		"bare LF, status":          "HTTP/1.1 200 OK\n" + ok,
		"bare LF, field":           "HTTP/1.1 200 OK\r\nX: 1\n" + ok,
		"bare LF, end":             "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\n",
		"two-digit status":         "HTTP/1.1 20 OK\r\n" + ok,
		"status 099":               "HTTP/1.1 099 OK\r\n" + ok,
		"HTTP/2":                   "HTTP/2 200 OK\r\n" + ok,
		"lower-case version":       "http/1.1 200 OK\r\n" + ok,
		"no space after status":    "HTTP/1.1 200OK\r\n" + ok,
		"CR in reason":             "HTTP/1.1 200 O\rK\r\n" + ok,
		"space in name":            "HTTP/1.1 200 OK\r\nBad Name: x\r\n" + ok,
		"space before colon":       "HTTP/1.1 200 OK\r\nName : x\r\n" + ok,
		"no colon":                 "HTTP/1.1 200 OK\r\nName\r\n" + ok,
		"empty name":               "HTTP/1.1 200 OK\r\n: x\r\n" + ok,
		"obs-fold":                 "HTTP/1.1 200 OK\r\nX: a\r\n b\r\n" + ok,
		"NUL in value":             "HTTP/1.1 200 OK\r\nX: a\x00b\r\n" + ok,
		"CR in value":              "HTTP/1.1 200 OK\r\nX: a\rb\r\n" + ok,
		"DEL in value":             "HTTP/1.1 200 OK\r\nX: a\x7fb\r\n" + ok,
		"length not digits":        "HTTP/1.1 200 OK\r\nContent-Length: 5a\r\n\r\n",
		"length signed":            "HTTP/1.1 200 OK\r\nContent-Length: +5\r\n\r\n",
		"length overflows":         "HTTP/1.1 200 OK\r\nContent-Length: 9223372036854775808\r\n\r\n",
		"length twice, equal":      "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n" + ok,
		"length list":              "HTTP/1.1 200 OK\r\nContent-Length: 0, 0\r\n\r\n",
		"gzip":                     "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n",
		"gzip, chunked":            "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n",
		"chunked twice":            "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n",
		"chunked and length":       "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n" + ok,
		"head over 1 MiB":          "HTTP/1.1 200 OK\r\nX: " + strings.Repeat("a", maxResponseHead) + "\r\n" + ok,
		"many lines over 1 MiB":    "HTTP/1.1 200 OK\r\n" + strings.Repeat("X-Abcdefghijklmn: 0123456789abcdef\r\n", maxResponseHead/36+1) + ok,
		"empty line before status": "\r\nHTTP/1.1 200 OK\r\n" + ok,
	} {
		for how, br := range headReaders(in) {
			var h RespHead
			err := h.Read(br)
			if err != errMalformedResponse || Classify(err) != FailBad {
				t.Errorf("%s (%s): %v; want errMalformedResponse, bad_response", name, how, err)
			}
		}
	}
}

// TestResponseEndsEarly: a pipe that ends before the head, inside it, inside the body or
// the trailer section is the worker's end (§8.4): crashed, not malformed.
func TestResponseEndsEarly(t *testing.T) {
	for name, c := range map[string]struct {
		in      string
		headErr error
	}{
		"nothing":         {"", io.EOF},
		"inside the head": {"HTTP/1.1 200 OK\r\nContent-Le", io.ErrUnexpectedEOF},
		"before its end":  {"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n", io.ErrUnexpectedEOF},
		"inside the body": {"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nab", nil},
		"inside a chunk":  {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab", nil},
		"in the trailers": {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nX-T: 1\r\n", nil},
	} {
		for how, br := range headReaders(c.in) {
			var h RespHead
			err := h.Read(br)
			if err == nil {
				var b RespBody
				b.Begin(br, &h)
				_, err = io.ReadAll(&b)
				if c.headErr != nil {
					t.Fatalf("%s (%s): the head was read; want %v", name, how, c.headErr)
				}
			} else if err != c.headErr {
				t.Fatalf("%s (%s): head error %v; want %v", name, how, err, c.headErr)
			}
			if !errors.Is(err, io.ErrUnexpectedEOF) && err != io.EOF || Classify(err) != FailCrashed {
				t.Errorf("%s (%s): %v; want the end of the pipe, crashed", name, how, err)
			}
		}
	}
}

// TestResponseHeadReused: a worker's head is read again for every exchange, its buffers
// reused; nothing of one head shows in the next.
func TestResponseHeadReused(t *testing.T) {
	br := bufio.NewReader(strings.NewReader("HTTP/1.1 200 OK\r\nConnection: x-a\r\nAfterBurn-Exchange: 1\r\nX-A: 1\r\nContent-Length: 0\r\n\r\n" +
		"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n"))
	var h RespHead
	one := ExchangeToken{buf: [16]byte{'1'}, n: 1}
	if err := h.Read(br); err != nil || !one.Echoes(h.Tokens, h.Token) || h.Forwarded("X-A") {
		t.Fatalf("first head: %v, echoes %v, X-A forwarded %v", err, one.Echoes(h.Tokens, h.Token), h.Forwarded("X-A"))
	}
	if err := h.Read(br); err != nil || h.Status != 404 || h.Tokens != 0 || len(h.conn) != 0 || len(h.fields) != 1 || !h.Forwarded("X-A") {
		t.Fatalf("second head: %v, %+v", err, h)
	}
}

// TestCopyFields: what reaches the client's header (§4.4, §5.4): every value of a repeated
// field in order, no hop-by-hop, Connection-named, framing or reserved field but
// AfterBurn-Error, and the watchdog's own fields after.
func TestCopyFields(t *testing.T) {
	br := bufio.NewReader(strings.NewReader("HTTP/1.1 200 OK\r\nSet-Cookie: a=1\r\nConnection: x-hop\r\nX-Hop: 1\r\nKeep-Alive: 5\r\n" +
		"AfterBurn-Error: bad_request\r\nAfterBurn-Exchange: 9\r\nAfterBurn-Other: 1\r\nSet-Cookie: b=2\r\nContent-Length: 0\r\n\r\n"))
	var h RespHead
	if err := h.Read(br); err != nil {
		t.Fatal(err)
	}
	out := http.Header{}
	h.CopyFields(out, RespField{"AfterBurn-Request-Id", "r1"})
	want := http.Header{"Set-Cookie": {"a=1", "b=2"}, "Afterburn-Error": {"bad_request"}, "AfterBurn-Request-Id": {"r1"}}
	if len(out) != len(want) {
		t.Fatalf("copied %q; want %q", out, want)
	}
	for k, v := range want {
		if !slices.Equal(out[k], v) {
			t.Fatalf("copied %q; want %q", out, want)
		}
	}
	// The values share one array: appending to one must not reach another.
	out["Set-Cookie"] = append(out["Set-Cookie"], "c=3")
	if out["Afterburn-Error"][0] != "bad_request" || out["AfterBurn-Request-Id"][0] != "r1" {
		t.Fatalf("an append overwrote a neighbour: %q", out)
	}
}

// The spec's spellings of the reserved names are canonicalised as
// http.CanonicalHeaderKey would, by the exact-match shortcut.
func TestCanonicalNameSpecSpellings(t *testing.T) {
	if len(specSpellings) != len(spelledNames) {
		t.Fatalf("%d spellings for %d names", len(specSpellings), len(spelledNames))
	}
	for i, s := range specSpellings {
		if got, want := canonicalName(s), spelledNames[i]; got != want || !strings.EqualFold(s, want) {
			t.Errorf("canonicalName(%q) = %q; want %q", s, got, want)
		}
	}
}

// ValidValue, eight bytes at a time, says what a byte-by-byte look says:
// for every byte value at every position of values of every length up to
// 24, beside allowed bytes of every kind (HTAB, obs-text, DEL's neighbours).
func TestValidValueAsBytewise(t *testing.T) {
	fill := []byte("aZ \t~\x80\xff!")
	for n := 0; n <= 24; n++ {
		for pos := 0; pos < n; pos++ {
			for c := 0; c < 256; c++ {
				v := make([]byte, n)
				for i := range v {
					v[i] = fill[(i+c)%len(fill)]
				}
				v[pos] = byte(c)
				if got, want := ValidValue(v), validBytes(v); got != want {
					t.Fatalf("ValidValue(%q) = %v; byte by byte %v", v, got, want)
				}
			}
		}
	}
}

// TestCopyFieldsOutlivesTheHead: a head's fields are pieces of its reused buffer (RespHead),
// so what CopyFields put in a header, names and values, must stay as they were when the
// same head reads the next response over them; the fields Read gives are the new head's.
func TestCopyFieldsOutlivesTheHead(t *testing.T) {
	br := bufio.NewReader(strings.NewReader(
		"HTTP/1.1 200 OK\r\nX-Kept: first\r\nContent-Type: text/plain\r\nContent-Length: 5\r\n\r\n" +
			"HTTP/1.1 200 OK\r\nX-Zzzzz: ZZZZZ\r\nContent-Type: zzzz/zzzzz\r\nContent-Length: 7\r\n\r\n"))
	var h RespHead
	if err := h.Read(br); err != nil {
		t.Fatal(err)
	}
	out := http.Header{}
	h.CopyFields(out, RespField{"Content-Length", h.LengthValue()})
	if err := h.Read(br); err != nil {
		t.Fatal(err)
	}
	want := http.Header{"X-Kept": {"first"}, "Content-Type": {"text/plain"}, "Content-Length": {"5"}}
	if len(out) != len(want) {
		t.Fatalf("after the next head, the copy holds %q; want %q", out, want)
	}
	for k, v := range want {
		if !slices.Equal(out[k], v) {
			t.Fatalf("after the next head, the copy holds %q; want %q", out, want)
		}
	}
	if !h.Has("X-Zzzzz") || h.LengthValue() != "7" {
		t.Fatalf("second head: %+v", h.fields)
	}
}

// TestResponseHeadReadAllocatesNothing: a head read into a worker's kept buffers costs no
// allocation (issue 29: none per request on the front's path), the exchange token's too.
func TestResponseHeadReadAllocatesNothing(t *testing.T) {
	head := "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nAfterBurn-Exchange: 0123456789abcdef0123456789abcdef\r\nContent-Length: 14\r\n\r\n"
	r := strings.NewReader(head)
	br := bufio.NewReaderSize(r, 4096)
	var h RespHead
	allocs := testing.AllocsPerRun(100, func() {
		r.Reset(head)
		br.Reset(r)
		if err := h.Read(br); err != nil || h.Length != 14 || h.Token == "" {
			t.Fatalf("%v %+v", err, h)
		}
	})
	if allocs != 0 {
		t.Errorf("Read: %v allocations per head; want 0", allocs)
	}
}
