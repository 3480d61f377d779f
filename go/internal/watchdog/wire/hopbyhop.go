package wire

import (
	"net/http"
	"strings"
)

// isHopByHop reports the fields of PROTOCOL.md §5.4 that are never
// forwarded, in either direction, by their canonical name. Trailer is not
// one: it announces trailers, which are forwarded (trailers.go, §6.7).
func isHopByHop(name string) bool {
	switch name {
	case "Connection", "Keep-Alive", "Proxy-Connection", "Proxy-Authenticate", "Proxy-Authorization",
		"Te", "Transfer-Encoding", "Upgrade":
		return true
	}
	return false
}

// isReserved reports a field of the AfterBurn- namespace (PROTOCOL.md §5.3).
func isReserved(name string) bool {
	// The first byte first: most names are not reserved, and EqualFold
	// of ten bytes runs on every forwarded field; then the canonical
	// spelling, which names from a worker's head have (canonicalName).
	if len(name) < 10 || name[0]|0x20 != 'a' {
		return false
	}
	return name[:10] == "Afterburn-" || strings.EqualFold(name[:10], "afterburn-")
}

// ConnectionFields returns the fields a Connection header names: they are
// hop-by-hop too (PROTOCOL.md §5.4). Usually nil.
func ConnectionFields(h http.Header) map[string]bool {
	var m map[string]bool
	for _, v := range h["Connection"] {
		for _, tok := range strings.Split(v, ",") {
			if tok = strings.TrimSpace(tok); tok != "" {
				if m == nil {
					m = make(map[string]bool)
				}
				m[http.CanonicalHeaderKey(tok)] = true
			}
		}
	}
	return m
}

// DropRequestField lists what the watchdog does not forward from a client
// head: hop-by-hop and reserved fields, Expect (answered by the watchdog,
// §5.4), and the framing it writes itself (§4.2).
func DropRequestField(name string, conn map[string]bool) bool {
	return isHopByHop(name) || conn[name] || isReserved(name) ||
		name == "Expect" || name == "Content-Length" || name == "Host"
}
