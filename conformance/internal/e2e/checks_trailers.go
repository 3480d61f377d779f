package e2e

import (
	"encoding/json"
	"fmt"
)

// trailersBothWays: §6.7 — a chunked POST to /trailers with a trailer field and fields that
// must not be trailers: the handler sees the client's trailer and none of the others (the
// watchdog drops Content-Length, Host, Content-* and Authorization from a trailer section,
// RFC 9110 §6.5.1), and the
// response carries the trailer the handler set, declared by the Trailer field, which the
// watchdog forwards (§5.4).
func trailersBothWays(t *T) {
	rc := t.Dial()
	rc.Send("POST /trailers HTTP/1.1\r\nHost: fn\r\nTransfer-Encoding: chunked\r\nTrailer: X-Client-Trailer\r\n\r\n" +
		"5\r\nhello\r\n6\r\n world\r\n0\r\nX-Client-Trailer: sent\r\nContent-Length: 99\r\nHost: evil.example\r\n" +
		"Content-Type: text/evil\r\nAuthorization: Basic ZXZpbA==\r\n\r\n")
	r := rc.Read("POST")
	t.Status(r, 200)
	var got struct {
		Body     string            `json:"body"`
		Trailers map[string]string `json:"trailers"`
	}
	if err := json.Unmarshal(r.Body, &got); err != nil {
		t.Fatalf("%s: body is not the /trailers JSON: %v\ngot response: %s", t.lastReq(), err, r)
	}
	want := map[string]string{"x-client-trailer": "sent"}
	if got.Body != "hello world" || fmt.Sprint(got.Trailers) != fmt.Sprint(want) {
		t.Fatalf("%s: the handler saw body %q and trailers %v; want %q and exactly %v: the client's trailer reaches it, Content-Length, Host, Content-Type and Authorization in a trailer section do not (§6.7)\ngot response: %s",
			t.lastReq(), got.Body, got.Trailers, "hello world", want, r)
	}
	if len(r.TransferEncoding) == 0 {
		t.Fatalf("%s: the response is not chunked; want the handler's chunked body, which carries its trailers (§6.7)\ngot response: %s", t.lastReq(), r)
	}
	if v, declared := r.Trailer["X-Fixture-Trailer"]; !declared || len(v) != 1 || v[0] != "done" {
		t.Fatalf("%s: response trailers %v; want X-Fixture-Trailer: done, declared in the head's Trailer field (§6.7, §5.4)\ngot response: %s", t.lastReq(), r.Trailer, r)
	}
}
