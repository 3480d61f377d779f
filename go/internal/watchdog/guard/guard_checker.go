package guard

// The guard's checker (PROTOCOL.md §10.5): a state machine fed the bytes a
// client sends, in any pieces, that says how many of them may go on to
// net/http and finds the first offence. It never touches a socket
// (guard.go does) and never allocates.

import (
	"bytes"
	"math"

	"github.com/afterburn-dev/afterburn/go/internal/watchdog/wire"
)

const (
	// headSlack is how far past max_header_bytes the guard lets a head run
	// (PROTOCOL.md §10.5): net/http's own read limit is MaxHeaderBytes +
	// 4096 ("bufio slop", Server.initialReadLimitSize), so heads up to the
	// bound reach the handler, whose exact count answers 431 with §8.1
	// (§7.1), and longer ones are answered by the guard, also with §8.1,
	// before net/http's plain-text 431 could be.
	headSlack = 4096
	// maxChunkLine bounds a chunk-size line with its extensions, as
	// net/http's own chunked reader does.
	maxChunkLine = 4096
)

// RejectReason is why the checker refused a client's bytes; the text is
// written to the watchdog's log.
type RejectReason struct {
	Type wire.ErrorType
	Text string
}

// PROTOCOL.md §10.5: what the guard rejects.
var (
	ReasonBareLF       = &RejectReason{wire.ErrBadRequest, "a line ends in a bare LF, not CRLF (RFC 9112 §2.2)"}
	ReasonObsFold      = &RejectReason{wire.ErrBadRequest, "a field line starts with whitespace: obs-fold (RFC 9112 §5.2)"}
	ReasonCLAndTE      = &RejectReason{wire.ErrBadRequest, "Content-Length together with Transfer-Encoding (RFC 9112 §6.1)"}
	ReasonTENotHTTP11  = &RejectReason{wire.ErrBadRequest, "Transfer-Encoding in a request that is not HTTP/1.1 (RFC 9112 §6.1)"}
	ReasonCLRepeated   = &RejectReason{wire.ErrBadRequest, "more than one Content-Length field line (RFC 9112 §6.3)"}
	ReasonCLNotDigits  = &RejectReason{wire.ErrBadRequest, "a Content-Length that is not 1-19 digits within 63 bits (RFC 9110 §8.6)"}
	ReasonHeadTooLarge = &RejectReason{wire.ErrHeadersTooLarge, "the request head is longer than max_header_bytes + 4096 (PROTOCOL.md §7.1)"}
	ReasonChunkSize    = &RejectReason{wire.ErrBadRequest, "a chunk-size line that is not 1-16 hex digits with optional extensions (RFC 9112 §7.1)"}
	ReasonChunkCRLF    = &RejectReason{wire.ErrBadRequest, "chunk data not followed by CRLF (RFC 9112 §7.1)"}
	reasonTrailerLarge = &RejectReason{wire.ErrBadRequest, "the trailer section is longer than max_header_bytes + 4096 (PROTOCOL.md §4.3)"}
	reasonHeadTimeout  = &RejectReason{wire.ErrRequestTimeout, "the request head was not complete read_timeout after its first byte"}
)

type checkState uint8

const (
	stHead      checkState = iota // in a request head, or before one
	stBody                        // Content-Length body bytes
	stChunkSize                   // a chunk-size line
	stChunkData                   // chunk data bytes
	stChunkCR                     // the CR after chunk data
	stChunkLF                     // the LF after chunk data
	stTrailer                     // trailer lines after the last chunk
	stEnd                         // a head net/http refuses (501): nothing after it is released
	stRejected                    // an offence was found: nothing after it is examined
)

// checker is the guard's state machine (sans-IO): fed the bytes a client
// sent, it says how many may go on to net/http. It never allocates.
type checker struct {
	maxHead int // longest head, and trailer section, let through
	state   checkState

	// Offsets into the held input, the bytes not yet released: mark is the
	// first byte that is not releasable (the start of the current head, or
	// of the current line in a body), lineStart the start of the line being
	// read, seen the first byte not examined yet.
	mark, lineStart, seen int

	remaining   uint64 // stBody, stChunkData: bytes to pass before the next step
	heads       uint32 // heads begun to wait for so far (wraps)
	trailerLen  int    // stTrailer: bytes of complete trailer lines so far
	headOffence bool   // stRejected: the offence is in a head, not in a body

	// The head being read.
	requestLine bool // its request line has been read
	http11      bool // the request line ends in HTTP/1.1
	clLines     int
	teLines     int
	length      uint64
	teChunked   bool
}

func newChecker(maxHead int) checker { return checker{maxHead: maxHead} }

// scan examines b, which holds every byte of the client's not yet released
// (the first c.seen of them were examined by earlier calls), and returns
// how many leading bytes of b may be released now; the caller drops them
// from b before the next call. With a reason, the bytes from n on are the
// offence and must never be released; the checker is then done.
func (c *checker) scan(b []byte) (n int, why *RejectReason) {
	i := c.seen
	for i < len(b) && why == nil {
		switch c.state {
		case stBody, stChunkData:
			k := uint64(len(b) - i)
			if k > c.remaining {
				k = c.remaining
			}
			i += int(k)
			c.mark = i
			c.passed(k)
		case stChunkCR, stChunkLF:
			want := byte('\r')
			if c.state == stChunkLF {
				want = '\n'
			}
			if b[i] != want {
				why = ReasonChunkCRLF
				break
			}
			i++
			c.mark = i
			if c.state == stChunkCR {
				c.state = stChunkLF
			} else {
				c.state, c.lineStart = stChunkSize, i
			}
		case stEnd, stRejected:
			i = len(b)
		default: // the line states: stHead, stChunkSize, stTrailer
			lf := bytes.IndexByte(b[i:], '\n')
			if lf < 0 {
				i = len(b)
				why = c.tooLong(i)
				break
			}
			i += lf + 1
			if why = c.tooLong(i); why == nil {
				why = c.line(b, i)
			}
		}
	}
	if why != nil {
		c.headOffence = c.state == stHead
		c.state = stRejected
	}
	n = c.mark
	c.mark, c.lineStart, c.seen = 0, max(c.lineStart-n, 0), i-n
	return n, why
}

// tooLong checks the bounds of PROTOCOL.md §10.5 for the line states, with
// the input examined up to end.
func (c *checker) tooLong(end int) *RejectReason {
	switch c.state {
	case stHead:
		if end-c.mark > c.maxHead {
			return ReasonHeadTooLarge
		}
	case stChunkSize:
		if end-c.lineStart > maxChunkLine {
			return ReasonChunkSize
		}
	case stTrailer:
		if c.trailerLen+end-c.lineStart > c.maxHead {
			return reasonTrailerLarge
		}
	}
	return nil
}

// line examines the complete line b[c.lineStart:end], which ends in LF.
func (c *checker) line(b []byte, end int) *RejectReason {
	line := b[c.lineStart:end]
	c.lineStart = end
	if len(line) < 2 || line[len(line)-2] != '\r' {
		return ReasonBareLF // PROTOCOL.md §10.5, §4.3 rule 1
	}
	text := line[:len(line)-2]
	switch c.state {
	case stHead:
		return c.headLine(text, end)
	case stChunkSize:
		return c.chunkSizeLine(text, end)
	}
	// stTrailer
	if len(text) == 0 {
		c.startHead(end) // the chunked message is complete
		return nil
	}
	if text[0] == ' ' || text[0] == '\t' {
		return ReasonObsFold
	}
	c.trailerLen += len(line)
	c.mark = end // a checked trailer line is released at once
	return nil
}

// headLine examines one line of a head, without its CRLF.
func (c *checker) headLine(text []byte, end int) *RejectReason {
	if !c.requestLine {
		if len(text) == 0 {
			// RFC 9112 §2.2: empty lines before a request line. They pass
			// on as they are; net/http skips a few after a POST and answers
			// any other with 400, which is not a smuggling risk.
			c.mark = end
			return nil
		}
		c.requestLine = true
		c.http11 = bytes.HasSuffix(text, []byte(" HTTP/1.1"))
		return nil
	}
	if len(text) == 0 {
		return c.endHead(end)
	}
	if text[0] == ' ' || text[0] == '\t' {
		return ReasonObsFold // PROTOCOL.md §4.3 rule 4
	}
	colon := bytes.IndexByte(text, ':')
	if colon < 0 {
		return nil // net/http answers 400 for a line without a colon
	}
	// Names are compared as net/http canonicalises them: ASCII case only.
	// A name with anything net/http would not canonicalise (a space before
	// the colon, a byte outside the token set) is a name net/http refuses,
	// so it need not be counted here.
	name, value := text[:colon], wire.TrimOWS(text[colon+1:])
	switch {
	case wire.AsciiEqualFold(name, "content-length"):
		c.clLines++
		if c.clLines > 1 {
			return ReasonCLRepeated // even with equal values: §4.3 rule 6
		}
		n, ok := wire.ParseLength(value)
		if !ok {
			return ReasonCLNotDigits
		}
		c.length = n
	case wire.AsciiEqualFold(name, "transfer-encoding"):
		c.teLines++
		c.teChunked = wire.AsciiEqualFold(value, "chunked")
	}
	return nil
}

// endHead decides, at a head's empty line, whether the head may go on and
// how its body is framed.
func (c *checker) endHead(end int) *RejectReason {
	switch {
	case c.clLines > 0 && c.teLines > 0:
		return ReasonCLAndTE
	case c.teLines > 0 && !c.http11:
		// net/http ignores Transfer-Encoding below HTTP/1.1 and would read
		// the chunked body as the next request.
		return ReasonTENotHTTP11
	}
	c.mark = end
	switch {
	case c.teLines == 1 && c.teChunked:
		c.state, c.lineStart = stChunkSize, end
	case c.teLines > 0:
		// Two Transfer-Encoding lines, or a coding other than chunked:
		// net/http answers 501 and closes (§8.2 not_implemented).
		c.state = stEnd
	case c.length > 0:
		c.state, c.remaining = stBody, c.length
	default:
		c.startHead(end)
	}
	return nil
}

// chunkSizeLine examines a chunk-size line without its CRLF: 1-16 hex
// digits, then optionally BWS ";" and extensions without control bytes
// (RFC 9112 §7.1.1), which are ignored.
func (c *checker) chunkSizeLine(text []byte, end int) *RejectReason {
	var size uint64
	k := 0
	for ; k < len(text); k++ {
		d, ok := wire.HexDigit(text[k])
		if !ok {
			break
		}
		if k == 16 {
			return ReasonChunkSize
		}
		size = size<<4 | uint64(d)
	}
	if k == 0 {
		return ReasonChunkSize
	}
	ext := wire.TrimOWS(text[k:])
	if len(ext) > 0 && ext[0] != ';' || len(ext) == 0 && k < len(text) {
		return ReasonChunkSize // trailing whitespace is BWS only before ";"
	}
	for _, ch := range ext {
		if ch < ' ' && ch != '\t' || ch == 0x7f {
			return ReasonChunkSize
		}
	}
	c.mark = end
	if size == 0 {
		c.state, c.trailerLen = stTrailer, 0
	} else {
		c.state, c.remaining = stChunkData, size
	}
	return nil
}

// startHead makes the checker wait for a new head at offset at.
func (c *checker) startHead(at int) {
	*c = checker{maxHead: c.maxHead, mark: at, lineStart: at, seen: c.seen, heads: c.heads + 1}
}

// timedOut ends the head being read: it was not complete in time
// (PROTOCOL.md §10.5). The checker is then done, as after an offence.
func (c *checker) timedOut() *RejectReason {
	c.state, c.headOffence = stRejected, true
	return reasonHeadTimeout
}

// passable is how many bytes may go from the socket to net/http unexamined
// now: the rest of a Content-Length body or of chunk data. The caller holds
// no unreleased bytes when it asks.
func (c *checker) passable() int {
	if c.state != stBody && c.state != stChunkData {
		return 0
	}
	return int(min(c.remaining, math.MaxInt32))
}

// passed accounts for k body or chunk bytes let through.
func (c *checker) passed(k uint64) {
	c.remaining -= k
	if c.remaining > 0 {
		return
	}
	if c.state == stBody {
		c.startHead(c.mark)
	} else {
		c.state = stChunkCR
	}
}
