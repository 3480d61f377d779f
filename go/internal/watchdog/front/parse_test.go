package front

import (
	"net/http"
	"net/url"
	"reflect"
	"testing"
)

// A head like the connection's last costs no allocation (heads); a
// different one is read afresh, fields repeated included, into the same
// request.
func TestParseHeadReusesTheLastHeadsStrings(t *testing.T) {
	var hs heads
	r := &http.Request{Header: http.Header{}, URL: &url.URL{}}
	parse := func(head string) {
		t.Helper()
		clear(r.Header)
		// In a larger buffer, as the connection's: b's capacity runs on.
		buf := make([]byte, len(head), len(head)+64)
		copy(buf, head)
		if !parseHead(buf, r, "/rejected", &hs) {
			t.Fatalf("parseHead refused %q", head)
		}
	}
	same := "GET /a?b HTTP/1.1\r\nHost: example\r\nUser-Agent: x\r\nAccept: */*\r\n\r\n"
	parse(same)
	buf := make([]byte, len(same), 4096)
	copy(buf, same)
	allocs := testing.AllocsPerRun(100, func() {
		clear(r.Header)
		parseHead(buf, r, "/rejected", &hs)
	})
	if allocs != 0 {
		t.Errorf("the same head again: %v allocations; want 0", allocs)
	}

	parse("POST /c/d HTTP/1.1\r\nAccept: a\r\nHost: other:8080\r\nAccept:  b \r\nContent-Length: 3\r\n\r\n")
	want := http.Header{"Accept": {"a", "b"}, "Content-Length": {"3"}}
	if r.Method != "POST" || r.RequestURI != "/c/d" || r.URL.Path != "/c/d" || r.Host != "other:8080" ||
		r.ContentLength != 3 || !reflect.DeepEqual(r.Header, want) {
		t.Errorf("a different head: %s %q path %q host %q length %d fields %v; want POST /c/d, other:8080, 3, %v",
			r.Method, r.RequestURI, r.URL.Path, r.Host, r.ContentLength, r.Header, want)
	}
}
