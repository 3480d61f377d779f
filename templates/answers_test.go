package templates

// What each template's function answers. The four skeletons answer alike (smoke); a template
// that carries a function over from an OpenFaaS template unchanged answers as the original
// does for that function, and pins the original's files by SHA-256 (TestPinnedFiles).

import (
	"bytes"
	"crypto/rand"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// smoke sends the requests the skeleton answers, several per worker over keep-alive
// connections: the handler prints on every request, so any print reaching the protocol
// would corrupt one of these responses.
func smoke(t *testing.T, wd *watchdog, base string) {
	t.Helper()
	client := &http.Client{Timeout: 20 * time.Second}
	do := func(method, target, contentType string, body []byte) (*http.Response, []byte) {
		req, _ := http.NewRequest(method, base+target, bytes.NewReader(body))
		if contentType != "" {
			req.Header.Set("Content-Type", contentType)
		}
		wd.sent++
		id := fmt.Sprintf("smoke-%s-%d", strings.ToLower(method), wd.sent)
		req.Header.Set("X-Request-Id", id)
		if method == "GET" {
			wd.ids = append(wd.ids, id)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v\nwatchdog log:\n%s", method, target, err, wd.log())
		}
		defer resp.Body.Close()
		got, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatalf("%s %s: reading the body: %v\nwatchdog log:\n%s", method, target, err, wd.log())
		}
		if rid := resp.Header.Get("AfterBurn-Request-Id"); rid != id {
			t.Errorf("%s %s: AfterBurn-Request-Id %q; want %q", method, target, rid, id)
		}
		return resp, got
	}
	check := func(what string, resp *http.Response, body []byte, wantType string, want []byte) {
		t.Helper()
		if resp.StatusCode != 200 || !bytes.Equal(body, want) || resp.Header.Get("Content-Type") != wantType {
			t.Errorf("%s: got %d %q %.200q; want 200 %q %.200q\nwatchdog log:\n%s",
				what, resp.StatusCode, resp.Header.Get("Content-Type"), body, wantType, want, wd.log())
		}
	}
	for i := range 8 {
		name := fmt.Sprintf("Ada%d", i)
		resp, body := do("GET", "/?name="+name, "", nil)
		check("GET /?name="+name, resp, body, "text/plain; charset=utf-8", []byte("Hello, "+name+"!\n"))
		resp, body = do("POST", "/", "application/json", []byte(`{"n":`+fmt.Sprint(i)+`}`))
		check("POST / (JSON)", resp, body, "application/json", []byte(`{"n":`+fmt.Sprint(i)+`}`))
	}
	big := make([]byte, 256<<10)
	rand.Read(big)
	resp, body := do("POST", "/", "application/octet-stream", big)
	check("POST / (256 KiB)", resp, body, "application/octet-stream", big)
	resp, body = do("GET", "/", "", nil)
	check("GET /", resp, body, "text/plain; charset=utf-8", []byte("Hello, world!\n"))

}

// python3-http-afterburn (issue 32, PROTOCOL.md §13): its handler.py is python3-http's default
// handler byte for byte (openfaas/python-flask-template, template/python3-http/function/handler.py).
var python3HTTPPinned = map[string]string{
	"function/handler.py": "2f9afefde9339e4730f8d924aa5006bac14c9ede8d65aa646d8122cd482633ee",
}

// What python3-http answers for its default handler, on any path and method, over
// kept-alive connections: Flask's text/html for a str body.
func answersPython3HTTP(t *testing.T, wd *watchdog, base string) {
	client := &http.Client{Timeout: 20 * time.Second}
	for i, m := range []string{"GET", "POST", "PUT", "GET", "DELETE", "PATCH", "GET", "POST"} {
		req, _ := http.NewRequest(m, base+"/some/path?i="+strconv.Itoa(i), strings.NewReader("body"))
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("%s: %v\nwatchdog log:\n%s", m, err, wd.log())
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		wd.sent++
		if resp.StatusCode != 200 || string(body) != "Hello from OpenFaaS!" || resp.Header.Get("Content-Type") != "text/html; charset=utf-8" {
			t.Errorf("%s: got %d %q %q; want 200 %q %q\nwatchdog log:\n%s", m, resp.StatusCode,
				resp.Header.Get("Content-Type"), body, "text/html; charset=utf-8", "Hello from OpenFaaS!", wd.log())
		}
	}
}

// node20-afterburn: the node20 template's function/handler.js as published in
// github.com/openfaas/templates (MIT), served through the Node library's OpenFaaS adapter.
var node20Pinned = map[string]string{
	"function/handler.js": "52f4ab6bea295581b200cd714b8ff6f92031fcd527f3698e439ddd7d4f5d56d7",
}

// What the node20 handler answers: its result object as JSON, event.body being what the
// template's body parsing makes of the request.
func answersNode20(t *testing.T, wd *watchdog, base string) {
	client := &http.Client{Timeout: 20 * time.Second}
	for _, c := range []struct {
		method, target, contentType, body string
		want                              string
	}{
		{"POST", "/", "application/json", `{"name":"Ada"}`, `{"body":"{\"name\":\"Ada\"}","content-type":"application/json"}`},
		{"POST", "/orders", "text/plain", "hi", `{"body":"\"hi\"","content-type":"text/plain"}`},
		{"GET", "/?x=1", "", "", `{"body":"\"\"","content-type":"text/plain"}`},
		{"PUT", "/form", "application/x-www-form-urlencoded", "a=1&a=2", `{"body":"{\"a\":[\"1\",\"2\"]}","content-type":"application/x-www-form-urlencoded"}`},
	} {
		req, _ := http.NewRequest(c.method, base+c.target, strings.NewReader(c.body))
		if c.contentType != "" {
			req.Header.Set("Content-Type", c.contentType)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v\nwatchdog log:\n%s", c.method, c.target, err, wd.log())
		}
		got, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		wd.sent++
		if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/json" || !bytes.Equal(got, []byte(c.want)) {
			t.Errorf("%s %s (%s %q): got %d %q %s; want 200 application/json %s\nwatchdog log:\n%s",
				c.method, c.target, c.contentType, c.body, resp.StatusCode, resp.Header.Get("Content-Type"), got, c.want, wd.log())
		}
	}
}

// golang-http-afterburn: template/golang-http/function/handler.go of
// github.com/openfaas/golang-http-template at 9644d651d81891deff9e2db2664dbadc082ea21c
// (MIT License, OpenFaaS Ltd and Alex Ellis), the template's default handler.
var golangHTTPPinned = map[string]string{
	"function/handler.go": "031995c6b72d131f558003645d86cddb60a65768a361d6d214345ca8be4b76ce",
}

// What golang-http's default handler answers: "Body: " and the request's body.
func answersGolangHTTP(t *testing.T, wd *watchdog, base string) {
	client := &http.Client{Timeout: 20 * time.Second}
	for i, body := range []string{"hello", "", strings.Repeat("é", 40000)} {
		req, _ := http.NewRequest("POST", base+"/?x=1", strings.NewReader(body))
		id := fmt.Sprintf("golang-http-%d", i)
		req.Header.Set("X-Request-Id", id)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("POST: %v\nwatchdog log:\n%s", err, wd.log())
		}
		got, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		wd.sent++
		if resp.StatusCode != 200 || string(got) != "Body: "+body || resp.Header.Get("AfterBurn-Request-Id") != id {
			t.Errorf("POST %.20q: got %d %.40q (request id %q); want 200 %.40q\nwatchdog log:\n%s",
				body, resp.StatusCode, got, resp.Header.Get("AfterBurn-Request-Id"), "Body: "+body, wd.log())
		}
	}
}

// java11-afterburn (issue 32, PROTOCOL.md §13): Handler.java and HandlerTest.java are java11's
// defaults byte for byte (openfaas/templates, template/java11/function/src/...), served through
// dev.afterburn.shapes.OpenFaas.
var java11Pinned = map[string]string{
	"function/src/main/java/com/openfaas/function/Handler.java": "3b987ab01d82e659d65d78e80ed8b8606e88b6f87131d96a87a9d80c9de59abd",
	"function/src/test/java/HandlerTest.java":                   "ce97313404bd2f95b6af4e697fc11adcb59536acf2693fc5624cdd929e535bbb",
}

// What java11's entrypoint answers for its default handler, on any path and method, over
// kept-alive connections.
func answersJava11(t *testing.T, wd *watchdog, base string) {
	client := &http.Client{Timeout: 20 * time.Second}
	for i, m := range []string{"GET", "POST", "PUT", "GET", "DELETE", "PATCH", "GET", "POST"} {
		req, _ := http.NewRequest(m, base+"/some/path?i="+strconv.Itoa(i), strings.NewReader("body"))
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("%s: %v\nwatchdog log:\n%s", m, err, wd.log())
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		wd.sent++
		if resp.StatusCode != 200 || string(body) != "Hello, world!" {
			t.Errorf("%s: got %d %q; want 200 %q\nwatchdog log:\n%s", m, resp.StatusCode, body, "Hello, world!", wd.log())
		}
	}
}
