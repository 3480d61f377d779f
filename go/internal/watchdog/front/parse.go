package front

// The front's request parser (PROTOCOL.md §10.6): sans-IO, it reads one
// head that the guard (§10.5) has already checked and released whole, and
// either fills an *http.Request as net/http would, or says that net/http
// must read it instead. It never rejects: a head it does not take goes to
// net/http with the connection, which answers it as it always has. So the
// front can only be stricter than net/http, never laxer, and where it takes
// a head it must read it exactly as net/http does; the differential fuzz
// target (fuzz_test.go) holds it to both.

import (
	"bytes"
	"net/http"
	"net/textproto"
	"net/url"

	"github.com/afterburn-dev/afterburn/go/internal/watchdog/wire"
)

// headEnd is the length of the head at the start of b, through its empty
// line, or -1 when b does not hold all of it. The guard has made sure every
// line ends in CRLF.
func headEnd(b []byte) int {
	i := bytes.Index(b, crlfcrlf)
	if i < 0 {
		return -1
	}
	return i + 4
}

var crlfcrlf = []byte("\r\n\r\n")

// parseHead reads the head b (through its empty line) into r, whose Header
// is empty and reused, its strings those of the connection's heads hs. It
// returns false, and r is then to be ignored, for every head the front
// leaves to net/http (§10.6): not HTTP/1.1; a method or target net/http
// treats specially (CONNECT, PRI, a target not in origin form or with bytes
// outside RFC 3986's path and query characters); any field net/http would
// refuse, or that asks for more than a plain exchange (Transfer-Encoding,
// Expect, Upgrade, Trailer); no Host, several, or one outside a
// conservative set of bytes; and the rejection that stands for an offending
// head (§10.5).
func parseHead(b []byte, r *http.Request, rejected string, hs *heads) bool {
	// The guard let no LF through without its CR; a CR elsewhere is a
	// control byte, which nothing here takes.
	end := bytes.IndexByte(b, '\n') - 1
	if end < 0 || b[end] != '\r' {
		return false
	}
	if string(b) != hs.last { // compared without a copy
		hs.last = string(b)
	}
	s := hs.last
	hs.vals = hs.vals[:0]
	line := b[:end]
	sp := bytes.IndexByte(line, ' ')
	if sp <= 0 {
		return false
	}
	method, rest := line[:sp], line[sp+1:]
	sp = bytes.IndexByte(rest, ' ')
	if sp < 0 || string(rest[sp+1:]) != "HTTP/1.1" {
		return false
	}
	target := rest[:sp]
	for _, c := range method {
		if !wire.IsTokenByte(c) {
			return false
		}
	}
	m := internMethod(method)
	if m == "CONNECT" || m == "PRI" {
		return false
	}
	pct, ok := originForm(target)
	if !ok || string(target) == rejected {
		return false
	}

	h := r.Header
	var host []byte
	hosts, closing := 0, false
	r.ContentLength = 0
	for i := end + 2; ; {
		j := bytes.IndexByte(b[i:], '\n')
		if j < 1 || b[i+j-1] != '\r' {
			return false
		}
		fl := b[i : i+j-1]
		i += j + 1
		if len(fl) == 0 {
			break
		}
		colon := bytes.IndexByte(fl, ':')
		if colon <= 0 {
			return false
		}
		name, value := fl[:colon], wire.TrimOWS(fl[colon+1:])
		for _, c := range name {
			if !wire.IsTokenByte(c) {
				return false
			}
		}
		if !wire.ValidValue(value) {
			return false
		}
		key := canonicalKey(name)
		switch key {
		case "Host":
			host, hosts = value, hosts+1
			continue // net/http keeps it in r.Host, not r.Header
		case "Transfer-Encoding", "Expect", "Upgrade", "Trailer":
			return false
		case "Content-Length":
			n, ok := wire.ParseLength(value) // the guard let only one through
			if !ok {
				return false
			}
			r.ContentLength = int64(n)
		case "Connection":
			if hasToken(value, "close") {
				closing = true
			}
		}
		v := within(s, b, value)
		if old := h[key]; old != nil {
			h[key] = append(old, v) // a field repeated: its own slice
		} else {
			hs.vals = append(hs.vals, v)
			n := len(hs.vals)
			h[key] = hs.vals[n-1 : n : n]
		}
	}
	if hosts != 1 || !plainHost(host) {
		return false
	}

	r.Method = m
	r.RequestURI = within(s, b, target)
	r.Host = within(s, b, host)
	r.Close = closing
	if pct {
		u, err := url.ParseRequestURI(r.RequestURI)
		if err != nil {
			return false
		}
		*r.URL = *u
	} else {
		// What url.ParseRequestURI makes of a target without escapes: the
		// path is its own escaped form (EscapedPath gives it back as sent).
		path, query, _ := cutByte(r.RequestURI, '?')
		*r.URL = url.URL{Path: path, RawPath: path, RawQuery: query}
		if query == "" && len(target) > 0 && target[len(target)-1] == '?' {
			r.URL.ForceQuery = true
		}
	}
	return true
}

// heads is what a connection keeps so that a head like its last costs no
// allocation (a keep-alive client sends the same head, or nearly, again and
// again): the last head as one string, of which the request's target, Host
// and field values are substrings, made anew only when the head's bytes
// differ; and one backing array for the Header's value slices, reused from
// request to request as the connection reuses its http.Request (conn.go).
type heads struct {
	last string
	vals []string
}

// within is sub, a slice of b, as the same bytes of s, which is string(b),
// without a copy. sub's offset in b is told by its capacity: slicing from
// the front takes as much off both (nothing here cuts b's slices with a
// third index).
func within(s string, b, sub []byte) string {
	i := cap(b) - cap(sub)
	return s[i : i+len(sub)]
}

func cutByte(s string, c byte) (before, after string, found bool) {
	for i := 0; i < len(s); i++ {
		if s[i] == c {
			return s[:i], s[i+1:], true
		}
	}
	return s, "", false
}

// targetBytes are the bytes an origin-form target may hold unescaped (RFC
// 3986 pchar, "/" and "?"; "%" is checked apart): the front takes no target
// with anything else, which keeps it within what net/http reads the same.
var targetBytes = func() (t [256]bool) {
	for c := range 256 {
		t[c] = 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
			bytes.IndexByte([]byte("-._~!$&'()*+,;=:@/?"), byte(c)) >= 0
	}
	return t
}()

// originForm reports whether target is an origin-form target of plain
// bytes (RFC 9112 §3.2.1), and whether it holds percent-escapes, each of
// which must be "%" and two hex digits.
func originForm(target []byte) (pct, ok bool) {
	if len(target) == 0 || target[0] != '/' {
		return false, false
	}
	for i := 0; i < len(target); i++ {
		c := target[i]
		if c == '%' {
			if i+2 >= len(target) {
				return false, false
			}
			if _, ok := wire.HexDigit(target[i+1]); !ok {
				return false, false
			}
			if _, ok := wire.HexDigit(target[i+2]); !ok {
				return false, false
			}
			pct = true
			i += 2
			continue
		}
		if !targetBytes[c] {
			return false, false
		}
	}
	return pct, true
}

// plainHost is a Host value of letters, digits, ".", "-", ":", "[" and "]"
// (a name, an address, a port): a subset of what net/http accepts
// (httpguts.ValidHostHeader), and never empty.
func plainHost(h []byte) bool {
	if len(h) == 0 {
		return false
	}
	for _, c := range h {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
			c == '.' || c == '-' || c == ':' || c == '[' || c == ']') {
			return false
		}
	}
	return true
}

// hasToken reports whether the comma-separated list v holds token (lower
// case), compared without regard to ASCII case, as net/http's shouldClose
// reads Connection.
func hasToken(v []byte, token string) bool {
	for len(v) > 0 {
		item := v
		if i := bytes.IndexByte(v, ','); i >= 0 {
			item, v = v[:i], v[i+1:]
		} else {
			v = nil
		}
		if wire.AsciiEqualFold(wire.TrimOWS(item), token) {
			return true
		}
	}
	return false
}

// methods are the methods interned: a request with one costs no string.
var methods = []string{"GET", "POST", "PUT", "DELETE", "HEAD", "PATCH", "OPTIONS", "CONNECT", "PRI", "TRACE"}

func internMethod(m []byte) string {
	for _, s := range methods {
		if string(m) == s {
			return s
		}
	}
	return string(m)
}

// commonKeys are field names interned in their canonical form: a field
// with one of them costs no allocation for its name.
var commonKeys = func() map[string]string {
	m := map[string]string{}
	for _, k := range []string{"Accept", "Accept-Encoding", "Accept-Language", "Authorization",
		"Cache-Control", "Connection", "Content-Length", "Content-Type", "Cookie", "Expect",
		"Host", "If-Modified-Since", "If-None-Match", "Origin", "Pragma", "Referer",
		"Trailer", "Transfer-Encoding", "Upgrade", "User-Agent", "X-Forwarded-For",
		"X-Forwarded-Host", "X-Forwarded-Proto", "X-Real-Ip", "X-Request-Id", "Traceparent",
		"Tracestate", "Keep-Alive", "Te"} {
		m[k] = k
	}
	return m
}()

// canonicalKey is textproto.CanonicalMIMEHeaderKey of the token name, as
// net/http keys r.Header, without allocating for a common name.
func canonicalKey(name []byte) string {
	var arr [32]byte
	if len(name) <= len(arr) {
		c := arr[:len(name)]
		upper := true
		for i, ch := range name {
			switch {
			case upper && 'a' <= ch && ch <= 'z':
				ch -= 'a' - 'A'
			case !upper && 'A' <= ch && ch <= 'Z':
				ch += 'a' - 'A'
			}
			c[i] = ch
			upper = ch == '-'
		}
		if k, ok := commonKeys[string(c)]; ok {
			return k
		}
	}
	return textproto.CanonicalMIMEHeaderKey(string(name))
}
