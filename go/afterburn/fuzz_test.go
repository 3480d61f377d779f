package afterburn

// FuzzParseRequest feeds arbitrary bytes to the core's request parser (PROTOCOL.md
// §4.3), seeded with the bytes of every parse vector. `go test` runs the seeds and
// testdata/fuzz/FuzzParseRequest; `go test -fuzz FuzzParseRequest` explores further.

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// fuzzLimits picks the limits a fuzzed stream is parsed with: the base environment of
// the conformance suite, the defaults without it (§7.3), and small ones so that rules
// 11 and 12 (431, 413) are reached by short inputs.
func fuzzLimits(sel uint8) limits {
	switch sel % 4 {
	case 0:
		return limits{maxHead: 32768 + headSlack, maxBody: 67108864}
	case 1:
		return defaultLimits
	case 2:
		return limits{maxHead: 64, maxBody: 8}
	}
	return limits{maxHead: 200, maxBody: 0}
}

// parsed is one outcome of the parser: a request read to the end of its body, or the
// parse error that stopped the stream.
type parsed struct {
	Err         string // "status type" of the §8.2 error; "" for a request
	Method      string
	Target      string
	Minor       int
	Host        string
	Header      http.Header
	Trailer     http.Header
	Chunked     bool
	Length      int64 // r.ContentLength
	Body        []byte
	ID          string // "" when the library made one up (§11.1)
	Token       string // AfterBurn-Exchange (§4.6); "" without
	HasDeadline bool
	Handshake   *string
}

// maxFuzzRequests bounds the requests read from one input.
const maxFuzzRequests = 8

// parseStream reads requests from r until EOF or the first error, as the serve loop
// does (each body read to its end, §6.3), and returns what each one was.
func parseStream(t *testing.T, r io.Reader, lim limits) []parsed {
	t.Helper()
	c := newConn(r, io.Discard, lim)
	var out []parsed
	for range maxFuzzRequests {
		ex, err := c.readRequest()
		if err == io.EOF {
			return out // §9.4: the stream ended between requests
		}
		var body []byte
		if err == nil {
			body, err = io.ReadAll(ex.req.Body)
		}
		if err != nil {
			out = append(out, parsed{Err: parseErrorOutcome(t, err)})
			return out
		}
		q := ex.req
		p := parsed{
			Method: q.Method, Target: q.RequestURI, Minor: q.ProtoMinor, Host: q.Host,
			Header: q.Header, Trailer: q.Trailer, Chunked: q.ContentLength < 0,
			Length: q.ContentLength, Body: body, Token: ex.token, HasDeadline: ex.hasDeadline,
		}
		if slices.ContainsFunc(c.fields, func(f fieldPos) bool { return f.kind == fieldRequestID }) {
			p.ID = ex.id
		}
		if ex.isHandshake {
			p.Handshake = &ex.handshake
		}
		if p.Body == nil {
			p.Body = []byte{}
		}
		ex.cancel()
		out = append(out, p)
	}
	return out
}

// parseErrorOutcome checks that err is one of the errors the spec allows for parsing:
// §8.2's 400 bad_request, 413 body_too_large, 431 headers_too_large or 501
// not_implemented (§4.3, §8.8). Anything else — a panic, a bare io error — fails.
func parseErrorOutcome(t *testing.T, err error) string {
	t.Helper()
	var perr *protocolError
	if !errors.As(err, &perr) {
		t.Fatalf("parse failed with %T %v; want a §8.2 protocol error", err, err)
	}
	want := map[int]string{
		http.StatusBadRequest:                  typeBadRequest,
		http.StatusRequestEntityTooLarge:       typeBodyTooLarge,
		http.StatusRequestHeaderFieldsTooLarge: typeHeadersTooLarge,
		http.StatusNotImplemented:              typeNotImplemented,
	}
	if typ, ok := want[perr.status]; !ok || typ != perr.typ {
		t.Fatalf("parse error %d %s (%v); want 400, 413, 431 or 501 with its §8.2 type", perr.status, perr.typ, perr)
	}
	return fmt.Sprintf("%d %s", perr.status, perr.typ)
}

// serialise writes p back as the watchdog would frame it (§4.2): request line, one
// Host, every field value on its own line, the reserved fields, and the body framed as
// it came (Content-Length as sent, or one chunk plus the trailers).
func (p *parsed) serialise() []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "%s %s HTTP/1.%d\r\nHost: %s\r\n", p.Method, p.Target, p.Minor, p.Host)
	for _, k := range sortedKeys(p.Header) {
		for _, v := range p.Header[k] {
			fmt.Fprintf(&b, "%s: %s\r\n", k, v)
		}
	}
	if p.ID != "" {
		fmt.Fprintf(&b, "AfterBurn-Request-Id: %s\r\n", p.ID)
	}
	if p.HasDeadline {
		b.WriteString("AfterBurn-Timeout-Ms: 60000\r\n")
	}
	if p.Token != "" {
		fmt.Fprintf(&b, "AfterBurn-Exchange: %s\r\n", p.Token)
	}
	if p.Handshake != nil {
		fmt.Fprintf(&b, "AfterBurn-Handshake: %s\r\n", *p.Handshake)
	}
	if !p.Chunked {
		b.WriteString("\r\n")
		b.Write(p.Body)
		return b.Bytes()
	}
	b.WriteString("Transfer-Encoding: chunked\r\n")
	if len(p.Trailer) > 0 {
		b.WriteString("Trailer: ")
		b.WriteString(strings.Join(sortedKeys(p.Trailer), ", "))
		b.WriteString("\r\n")
	}
	b.WriteString("\r\n")
	if len(p.Body) > 0 {
		fmt.Fprintf(&b, "%x\r\n%s\r\n", len(p.Body), p.Body)
	}
	b.WriteString("0\r\n")
	for k, vv := range p.Trailer {
		for _, v := range vv {
			fmt.Fprintf(&b, "%s: %s\r\n", k, v)
		}
	}
	b.WriteString("\r\n")
	return b.Bytes()
}

// tokenSeeds put exchange tokens (§4.3 rule 14, §4.6) where the vectors do not: in a
// repeated handshake, next to every other reserved field, with whitespace around the
// value, in a chunked request, and one character past each edge of the token alphabet.
var tokenSeeds = []string{
	"OPTIONS * HTTP/1.1\r\nHost: afterburn\r\nAfterBurn-Handshake: 1\r\nAfterBurn-Exchange: Zz09\r\nContent-Length: 0\r\n\r\n" +
		"GET /a HTTP/1.1\r\nHost: fn\r\nAfterBurn-Request-Id: r1\r\nAFTERBURN-EXCHANGE:\t9aZ \r\nAfterBurn-Timeout-Ms: 5\r\n\r\n",
	"POST /c HTTP/1.1\r\nHost: fn\r\nafterburn-exchange: c0ffee\r\nTransfer-Encoding: chunked\r\nTrailer: X-T\r\n\r\n3\r\nabc\r\n0\r\nX-T: 1\r\n\r\n",
	"GET /e HTTP/1.1\r\nHost: fn\r\nAfterBurn-Exchange: a/\r\n\r\n",
	"GET /e HTTP/1.1\r\nHost: fn\r\nAfterBurn-Exchange: a:\r\n\r\n",
	"GET /e HTTP/1.1\r\nHost: fn\r\nAfterBurn-Exchange: a@\r\n\r\n",
	"GET /e HTTP/1.1\r\nHost: fn\r\nAfterBurn-Exchange: a[\r\n\r\n",
	"GET /e HTTP/1.1\r\nHost: fn\r\nAfterBurn-Exchange: a`\r\n\r\n",
	"GET /e HTTP/1.1\r\nHost: fn\r\nAfterBurn-Exchange: a{\r\n\r\n",
	"GET /e HTTP/1.1\r\nHost: fn\r\nAfterBurn-Exchange: a b\r\n\r\n",
}

func FuzzParseRequest(f *testing.F) {
	seeds := parseVectorSeeds(f)
	for _, s := range tokenSeeds {
		seeds = append(seeds, []byte(s))
	}
	for _, seed := range seeds {
		for sel := range uint8(4) {
			f.Add(seed, uint16(len(seed)/2), sel)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte, split uint16, sel uint8) {
		lim := fuzzLimits(sel)
		whole := parseStream(t, bytes.NewReader(data), lim)

		// §4.3: limits and rules apply as bytes arrive; the outcome must not depend
		// on where the pipe's reads happen to split the stream.
		k := int(split) % (len(data) + 1)
		parts := parseStream(t, &segmentReader{segs: [][]byte{
			slices.Clone(data[:k]), slices.Clone(data[k:])}}, lim)
		if !reflect.DeepEqual(whole, parts) {
			t.Fatalf("split at %d of %q:\n got %+v\nwant %+v (one read)", k, data, parts, whole)
		}

		// Every request accepted, written back in the watchdog's framing, parses to the
		// same request. Limits are lifted: the added reserved fields may make the head
		// longer than the original, and limits are not what this checks.
		for i, p := range whole {
			if p.Err != "" {
				continue
			}
			again := p.serialise()
			back := parseStream(t, bytes.NewReader(again), limits{maxHead: 1 << 20})
			if len(back) != 1 || !reflect.DeepEqual(back[0], p) {
				t.Fatalf("request %d of %q re-serialised as %q:\n got %+v\nwant %+v", i, data, again, back, p)
			}
		}
	})
}

// parseVectorSeeds returns the request bytes of every parse vector
// (conformance/vectors/*.json), read in place by loadVectors.
func parseVectorSeeds(f *testing.F) [][]byte {
	var out [][]byte
	for _, v := range loadVectors(f, "parse") {
		out = append(out, v.bytes())
	}
	return out
}
