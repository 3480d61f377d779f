package wire

import (
	"slices"
	"strings"
)

// Trailer fields (PROTOCOL.md §6.7): a chunked request's trailers go to the
// worker after its last chunk (exchange_request.go), a chunked response's go
// to the client after its last chunk (setTrailers), each less the fields that
// must not be trailers. The Trailer field that announces them is an ordinary
// field, forwarded in both directions (§5.4).

// TrailerAllowed reports whether a trailer field may be forwarded: not a
// field that frames, routes or authenticates a message, or that says how to
// process its content (RFC 9110 §6.5.1), nor a field of §5.4 or §5.3. Such a
// field in a trailer section is dropped: a recipient that merged it into the
// head would be misled. name is canonical.
func TrailerAllowed(name string) bool {
	switch name {
	case "Transfer-Encoding", "Content-Length", "Trailer", // framing
		"Host",                                                       // routing
		"Authorization", "Proxy-Authorization", "Proxy-Authenticate", // authentication
		"Www-Authenticate", "Authentication-Info", "Proxy-Authentication-Info",
		"Cookie", "Set-Cookie",
		"Cache-Control", "Expect", "Max-Forwards", "Pragma", "Range", "Te", // request modifiers
		"If-Match", "If-None-Match", "If-Modified-Since", "If-Unmodified-Since", "If-Range",
		"Age", "Expires", "Date", "Location", "Retry-After", "Vary", // response control data
		"Connection", "Keep-Alive", "Proxy-Connection", "Upgrade": // hop-by-hop (§5.4)
		return false
	}
	return !strings.HasPrefix(name, "Content-") && !isReserved(name)
}

// AppendTrailerField appends the Trailer field announcing the request
// trailers the client declared (net/http removes the client's Trailer field
// from r.Header and keeps the names as the keys of r.Trailer), less those
// that are not forwarded, in a stable order. Nothing when none is left.
func AppendTrailerField(b []byte, declared map[string][]string, conn map[string]bool) []byte {
	var arr [8]string
	names := arr[:0]
	for k := range declared {
		if TrailerAllowed(k) && !conn[k] && isToken(k) {
			names = append(names, k)
		}
	}
	if len(names) == 0 {
		return b
	}
	slices.Sort(names)
	b = append(b, "Trailer: "...)
	for i, k := range names {
		if i > 0 {
			b = append(b, ", "...)
		}
		b = append(b, k...)
	}
	return append(b, "\r\n"...)
}

// isToken reports an RFC 9110 token: a name net/http took from a Trailer
// field's value unchecked is written to the worker only if it is one.
func isToken(s string) bool {
	for i := 0; i < len(s); i++ {
		if !IsTokenByte(s[i]) {
			return false
		}
	}
	return s != ""
}
