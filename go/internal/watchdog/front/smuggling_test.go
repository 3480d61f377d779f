package front

import (
	"strings"
	"testing"
)

// smugglingCorpus is PROTOCOL.md §10.6's corpus of hostile and unusual
// streams: each goes through the guard and the front, and through the guard
// and net/http alone (compare), and both must read it the same way. reach is
// how many requests get to the handler, the guard's stand-in for a rejected
// head (§10.5) not counted; guard says whether the guard rejected a head;
// front how many of the requests the front itself took before it handed the
// connection to net/http or it closed. They are also FuzzFrontAgainstNetHTTP's
// seeds.
var smugglingCorpus = []struct {
	name, stream string
	reach        int
	guard        bool
	front        int
}{
	{"CL.TE", "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 6\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nG", 0, true, 0},
	{"TE.CL", "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nContent-Length: 6\r\n\r\n0\r\n\r\nG", 0, true, 0},
	{"TE.TE two lines", "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: x\r\n\r\n0\r\n\r\n", 0, false, 0},
	{"TE.TE chunked, identity", "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked, identity\r\n\r\n0\r\n\r\n", 0, false, 0},
	{"TE.TE case", "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: Chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n", 1, false, 0},
	{"TE.TE tab", "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding:\tchunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n", 1, false, 0},
	{"TE.TE space before colon", "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding : chunked\r\n\r\n0\r\n\r\n", 0, false, 0},
	{"TE.TE obs-fold", "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding:\r\n chunked\r\n\r\n0\r\n\r\n", 0, true, 0},
	{"TE in HTTP/1.0", "POST / HTTP/1.0\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 0, true, 0},
	{"CL duplicate equal", "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\nContent-Length: 3\r\n\r\nabc", 0, true, 0},
	{"CL duplicate differing", "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabcd", 0, true, 0},
	{"CL signed", "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: +3\r\n\r\nabc", 0, true, 0},
	{"CL negative", "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: -1\r\n\r\n", 0, true, 0},
	{"CL list", "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 3, 3\r\n\r\nabc", 0, true, 0},
	{"CL leading zeros", "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 003\r\n\r\nabc", 1, false, 1},
	{"obs-fold", "GET / HTTP/1.1\r\nHost: a\r\nX-A: b\r\n c\r\n\r\n", 0, true, 0},
	{"bare LF", "GET / HTTP/1.1\nHost: a\n\n", 0, true, 0},
	{"bare LF in a field", "GET / HTTP/1.1\r\nHost: a\r\nX-A: b\nX-B: c\r\n\r\n", 0, true, 0},
	{"bare CR in a value", "GET / HTTP/1.1\r\nHost: a\r\nX-A: b\rc\r\n\r\n", 0, false, 0},
	{"NUL in a value", "GET / HTTP/1.1\r\nHost: a\r\nX-A: b\x00c\r\n\r\n", 0, false, 0},
	{"NUL in the target", "GET /a\x00b HTTP/1.1\r\nHost: a\r\n\r\n", 0, false, 0},
	{"whitespace before the colon", "GET / HTTP/1.1\r\nHost: a\r\nX-A : b\r\n\r\n", 0, false, 0},
	{"absolute form", "GET http://a/b?c HTTP/1.1\r\nHost: a\r\n\r\n", 1, false, 0},
	{"asterisk form", "OPTIONS * HTTP/1.1\r\nHost: a\r\n\r\n", 0, false, 0}, // net/http answers it itself,
	{"CONNECT", "CONNECT a:443 HTTP/1.1\r\nHost: a:443\r\n\r\n", 1, false, 0},
	{"oversize request line", "GET /" + strings.Repeat("a", 40000) + " HTTP/1.1\r\nHost: a\r\n\r\n", 0, true, 0},
	{"oversize head", "GET / HTTP/1.1\r\nHost: a\r\n" + strings.Repeat("X-A: "+strings.Repeat("b", 100)+"\r\n", 400) + "\r\n", 0, true, 0},
	{"many fields", "GET / HTTP/1.1\r\nHost: a\r\n" + strings.Repeat("X-A: b\r\n", 1000) + "\r\n", 1, false, 0},
	{"HTTP/0.9", "GET /\r\n\r\n", 0, false, 0},
	{"HTTP/2 preface", "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", 1, false, 0},
	{"lower-case version", "GET / http/1.1\r\nHost: a\r\n\r\n", 0, false, 0},
	{"method with a bad byte", "G(T / HTTP/1.1\r\nHost: a\r\n\r\n", 0, false, 0},
	{"no Host", "GET / HTTP/1.1\r\nX-A: b\r\n\r\n", 0, false, 0},
	{"two Hosts", "GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 0, false, 0},
	{"bad escape", "GET /a%zz HTTP/1.1\r\nHost: a\r\n\r\n", 0, false, 0},
	{"escapes", "GET /a%2Fb/%C3%A9?x=%20&y HTTP/1.1\r\nHost: a\r\n\r\n", 1, false, 1},
	{"fragment", "GET /a#b HTTP/1.1\r\nHost: a\r\n\r\n", 1, false, 0},
	{"empty query", "GET /a? HTTP/1.1\r\nHost: a\r\n\r\n", 1, false, 1},
	{"obs-text value", "GET / HTTP/1.1\r\nHost: a\r\nX-A: caf\xc3\xa9\r\n\r\n", 1, false, 1},
	{"empty lines first", "\r\n\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n", 0, false, 0},
	{"HTTP/1.0", "GET / HTTP/1.0\r\nHost: a\r\n\r\nGET /2 HTTP/1.1\r\nHost: a\r\n\r\n", 1, false, 0},
	{"Expect", "POST / HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\nContent-Length: 3\r\n\r\nabc", 1, false, 0},
	{"Upgrade", "GET / HTTP/1.1\r\nHost: a\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n", 1, false, 0},
	{"pipelined", "GET /1 HTTP/1.1\r\nHost: a\r\n\r\nPOST /2 HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n\r\nabcGET /3?q HTTP/1.1\r\nHost: a\r\n\r\n", 3, false, 3},
	{"pipelined, handed over mid-stream", "GET /1 HTTP/1.1\r\nHost: a\r\n\r\nPOST /2 HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\nGET /3 HTTP/1.1\r\nHost: a\r\n\r\n", 3, false, 1},
	{"pipelined, then smuggled", "GET /1 HTTP/1.1\r\nHost: a\r\n\r\nPOST / HTTP/1.1\r\nHost: a\r\nContent-Length: 6\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nG", 1, true, 1},
	{"Connection: close", "GET /1 HTTP/1.1\r\nHost: a\r\nConnection: keep-alive, Close\r\n\r\nGET /2 HTTP/1.1\r\nHost: a\r\n\r\n", 1, false, 1},
	{"body cut short", "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 10\r\n\r\nabc", 1, false, 1},
	{"CRLF after a POST", "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\n\r\nx\r\nGET /2 HTTP/1.1\r\nHost: a\r\n\r\n", 2, false, 2},
	{"three CRLFs after a POST", "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\n\r\nx\r\n\r\n\r\nGET /2 HTTP/1.1\r\nHost: a\r\n\r\n", 1, false, 1},
	{"CRLF after a GET", "GET / HTTP/1.1\r\nHost: a\r\n\r\n\r\nGET /2 HTTP/1.1\r\nHost: a\r\n\r\n", 1, false, 1},
	{"CR CRLF CRLF after a POST", "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\n\r\nx\r\r\n\r\n", 1, false, 1},
	{"close among spaces", "GET /1 HTTP/1.1\r\nHost: a\r\nConnection: x Close\r\n\r\nGET /2 HTTP/1.1\r\nHost: a\r\n\r\n", 1, false, 1},
	{"close in a second Connection field", "GET /1 HTTP/1.1\r\nHost: a\r\nConnection: x\r\nConnection: close\r\n\r\nGET /2 HTTP/1.1\r\nHost: a\r\n\r\n", 1, false, 1},
	{"close among spaces in a second field", "GET /1 HTTP/1.1\r\nHost: a\r\nConnection: x\r\nConnection: y close\r\n\r\nGET /2 HTTP/1.1\r\nHost: a\r\n\r\n", 2, false, 2},
	{"bodies of unknown length", "GET /u HTTP/1.1\r\nHost: a\r\n\r\nGET /uf HTTP/1.1\r\nHost: a\r\n\r\nGET /ul HTTP/1.1\r\nHost: a\r\n\r\nHEAD /u HTTP/1.1\r\nHost: a\r\n\r\n", 4, false, 4},
	{"handler's Connection fields", "GET /uk HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n", 1, false, 1},
	{"handler's Connection: close", "GET /uk HTTP/1.1\r\nHost: a\r\n\r\nGET /uc HTTP/1.1\r\nHost: a\r\n\r\nGET /3 HTTP/1.1\r\nHost: a\r\n\r\n", 2, false, 2},
	{"Trailer field", "POST / HTTP/1.1\r\nHost: a\r\nTrailer: X-T\r\nContent-Length: 3\r\n\r\nabc", 1, false, 0},
}

// TestSmugglingCorpus runs the corpus through both paths (§10.6).
func TestSmugglingCorpus(t *testing.T) {
	g := testGuard()
	for _, v := range smugglingCorpus {
		t.Run(v.name, func(t *testing.T) {
			all, out, took := compare(t, g, []byte(v.stream))
			reach, guarded := 0, false
			for _, s := range all {
				if s.RequestURI == g.Target {
					guarded = true
				} else {
					reach++
				}
			}
			if reach != v.reach || guarded != v.guard {
				t.Errorf("%d requests reached the handler, the guard rejected one: %v; want %d, %v\nclient got %q", reach, guarded, v.reach, v.guard, out)
			}
			if took != v.front {
				t.Errorf("the front took %d requests; want %d", took, v.front)
			}
		})
	}
}
