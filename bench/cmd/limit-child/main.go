// Command limit-child is the "pipe limit" baseline of the benchmarks: a worker that answers
// the watchdog with canned bytes and does no validation at all. It finds the end of each head,
// reads a Content-Length body if there is one, and answers with that body (or a fixed
// greeting) behind a canned head. Nothing a real library can do is faster, so the ratio
// AfterBurn / limit says what the library's parsing and framing cost.
//
// It also serves as the Go "no library" child of the cold-start measurement: it answers the
// handshake (PROTOCOL.md §3.2) without importing anything of AfterBurn's.
//
// Not a protocol implementation: it would desynchronise on chunked or malformed input.
package main

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
)

var (
	handshakeReply = []byte("HTTP/1.1 200 OK\r\nAfterBurn-Protocol: 1\r\nAfterBurn-Library: bench-limit/0\r\nContent-Length: 0\r\n\r\n")
	greeting       = []byte("Hello, world!\n")
	headPrefix     = "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: "
	contentLength  = []byte("\ncontent-length:")
)

func main() {
	in, out := os.Stdin, os.Stdout
	if fds := os.Getenv("AFTERBURN_FDS"); fds != "" {
		r, w, ok := strings.Cut(fds, ",")
		rfd, err1 := strconv.Atoi(r)
		wfd, err2 := strconv.Atoi(w)
		if !ok || err1 != nil || err2 != nil {
			fmt.Fprintf(os.Stderr, "limit-child: bad AFTERBURN_FDS %q\n", fds)
			os.Exit(2)
		}
		in, out = os.NewFile(uintptr(rfd), "request"), os.NewFile(uintptr(wfd), "response")
	}
	buf := make([]byte, 0, 64<<10)
	resp := make([]byte, 0, 64<<10)
	chunk := make([]byte, 64<<10)
	first := true
	for {
		end := bytes.Index(buf, []byte("\r\n\r\n"))
		if end < 0 {
			n, err := in.Read(chunk)
			if n == 0 && err != nil {
				return // EOF between requests: PROTOCOL.md §9.4
			}
			buf = append(buf, chunk[:n]...)
			continue
		}
		head := buf[:end+2]
		bodyLen := declaredLength(head)
		for len(buf) < end+4+bodyLen {
			n, err := in.Read(chunk)
			if n == 0 && err != nil {
				return
			}
			buf = append(buf, chunk[:n]...)
		}
		body := buf[end+4 : end+4+bodyLen]
		if first {
			first = false
			out.Write(handshakeReply)
		} else {
			if len(body) == 0 {
				body = greeting
			}
			resp = append(resp[:0], headPrefix...)
			resp = strconv.AppendInt(resp, int64(len(body)), 10)
			resp = append(resp, "\r\n\r\n"...)
			resp = append(resp, body...)
			out.Write(resp)
		}
		buf = append(buf[:0], buf[end+4+bodyLen:]...)
	}
}

// declaredLength finds a Content-Length field by a case-insensitive byte scan; 0 if none.
func declaredLength(head []byte) int {
	i := bytes.Index(bytes.ToLower(head), contentLength)
	if i < 0 {
		return 0
	}
	rest := head[i+len(contentLength):]
	rest = rest[:bytes.IndexByte(rest, '\r')]
	n, _ := strconv.Atoi(strings.TrimSpace(string(rest)))
	return n
}
