package wire

import (
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
)

// PROTOCOL.md §4.6: every exchange with a worker that lists the exchange
// capability carries a token of its own, which the worker's response head
// must echo. Nothing else can bind a response to its request: the request id
// may repeat (§5.1), and §9.6's look at the pipe happens before the request
// is written, not after.

// CapabilityExchange is the capability name of §4.6 (§3.2).
const CapabilityExchange = "exchange"

// CapabilityFork is what a template lists in its handshake reply (PROTOCOL.md §2.6).
const CapabilityFork = "fork"

// ExchangeField is the field name of §4.6 in the canonical form net/http
// keys a parsed head by.
const ExchangeField = "Afterburn-Exchange"

// exchangeSeq numbers tokens for the life of the process: §4.6 forbids using
// one twice while the watchdog runs.
var exchangeSeq atomic.Uint64

// ExchangeToken is one token: the next number in base 36 (at most 13
// characters of 0-9 a-z), kept in place so that making one allocates nothing.
type ExchangeToken struct {
	buf [16]byte
	n   uint8
}

func NextToken() (t ExchangeToken) {
	t.n = uint8(len(strconv.AppendUint(t.buf[:0], exchangeSeq.Add(1), 36)))
	return t
}

func (t *ExchangeToken) Bytes() []byte { return t.buf[:t.n] }

// Set reports whether the token was made; the zero token means "none".
func (t *ExchangeToken) Set() bool { return t.n > 0 }

// EchoedBy reports whether a response head carries exactly one
// AfterBurn-Exchange field equal to the token (§4.6).
func (t *ExchangeToken) EchoedBy(h http.Header) bool {
	v := h[ExchangeField]
	if len(v) == 0 {
		return false
	}
	return t.Echoes(len(v), v[len(v)-1])
}

// Echoes is the rule of §4.6 for a head with n AfterBurn-Exchange fields,
// the last of value last: exactly one, equal to the token.
func (t *ExchangeToken) Echoes(n int, last string) bool {
	return n == 1 && last == string(t.Bytes())
}

// ListsCapability reports whether an AfterBurn-Capabilities field (§3.2:
// comma-separated, optional whitespace, possibly over several lines) names
// capability.
func ListsCapability(values []string, capability string) bool {
	for _, v := range values {
		for _, name := range strings.Split(v, ",") {
			if strings.TrimSpace(name) == capability {
				return true
			}
		}
	}
	return false
}
