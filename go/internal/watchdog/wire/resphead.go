package wire

// A worker's response head (PROTOCOL.md §4.4) and body framing, read from its
// response pipe. Every exchange reads one, so it is read without net/http's
// ReadResponse, which builds a whole http.Response: a map, a string per name
// and per value, a slice per name, then copied again into the client's header
// (13 allocations and ~11,000 instructions of a 72,000-instruction exchange).
// Here the head's bytes are copied once into one string that every name and
// value is a piece of, and its fields go straight into the client's header.
// The parser is as strict as a library's (§4.3): a stream that went wrong is
// not resynchronised (§8.5).

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"net/http"
	"net/http/httputil"
	"strconv"
	"strings"
	"unsafe"
)

// maxResponseHead bounds a response head, and a trailer section, with their
// CRLFs (PROTOCOL.md §4.4): past it the response is malformed (§8.5).
const maxResponseHead = 1 << 20

// errMalformedResponse is a response head or trailer section that breaks
// §4.4; classify makes it bad_response (§8.5).
var errMalformedResponse = errors.New("malformed response head")

// RespField is one field line, its name canonical as net/http keys a header.
type RespField struct{ Name, Value string }

// fieldSpan is where a field line's name and value lie in a head's bytes.
type fieldSpan struct{ name0, name1, value0, value1 int }

// RespHead is one response head. A worker keeps one and reuses its buffers:
// it carries one exchange at a time.
//
// The names and values of its fields (and Token, and LengthValue) are
// pieces of Raw, which the next Read overwrites: no allocation per head (issue
// 29), but they hold only until then, the end of the exchange. CopyFields
// copies them, since net/http reads its header again after the exchange gave
// its lane back (declared trailers, at the handler's return).
type RespHead struct {
	Status   int
	Length   int64  // Content-Length; -1 when it has none
	lengthAs string // the Content-Length field's value as the worker wrote it
	Chunked  bool   // Transfer-Encoding: chunked
	Close    bool   // Connection: close, or HTTP/1.0 without keep-alive
	fields   []RespField
	conn     []string // the field names that Connection lists, canonical (§5.4)
	Tokens   int      // AfterBurn-Exchange fields (§4.6)
	Token    string   // the last one's value
	Trailers []RespField
	Raw      []byte // the head's bytes, reused
	block    string // Raw as a string, without a copy: what fields are pieces of
	spans    []fieldSpan
}

// keptHeadMax is the largest head buffer kept for the next head: a lane's
// response reader's size (worker.go), which holds most heads whole.
const keptHeadMax = 64 << 10

// Read reads the next head from br. It returns io.EOF when br ended before
// the head began and io.ErrUnexpectedEOF inside it, both the worker's end
// (§8.4), errMalformedResponse for a head §4.4 does not allow (§8.5), or
// br's error.
func (h *RespHead) Read(br *bufio.Reader) error {
	h.Status, h.Length, h.lengthAs, h.Chunked, h.Close, h.Tokens, h.Token = 0, -1, "", false, false, 0, ""
	h.fields, h.conn, h.Trailers, h.block = h.fields[:0], h.conn[:0], h.Trailers[:0], ""
	raw, spans, http10, err := readFieldBlock(br, h.Raw[:0], h.spans[:0], true)
	if cap(raw) <= keptHeadMax {
		h.Raw, h.spans = raw, spans // kept for the next head; a rare huge one is not
	}
	if err != nil {
		return err
	}
	h.Status = int(raw[9]-'0')*100 + int(raw[10]-'0')*10 + int(raw[11]-'0')
	// Every name and value is a piece of raw, read as a string in place: the
	// lane's next head overwrites it, and nothing keeps them past the
	// exchange but what CopyFields copies.
	block := unsafe.String(unsafe.SliceData(raw), len(raw))
	h.block = block
	keepAlive := false
	for _, s := range spans {
		f := RespField{canonicalName(block[s.name0:s.name1]), block[s.value0:s.value1]}
		switch f.Name {
		case "Content-Length":
			n, ok := ParseLength(raw[s.value0:s.value1])
			if !ok || h.Length >= 0 {
				return errMalformedResponse // §4.3 rule 6, as for requests
			}
			h.Length, h.lengthAs = int64(n), f.Value
		case "Transfer-Encoding":
			if h.Chunked || !AsciiEqualFold(raw[s.value0:s.value1], "chunked") {
				return errMalformedResponse // §4.4: chunked or a length, nothing else
			}
			h.Chunked = true
		case "Connection":
			for _, tok := range strings.Split(f.Value, ",") {
				switch tok = strings.TrimSpace(tok); {
				case tok == "":
				case strings.EqualFold(tok, "close"):
					h.Close = true
				case strings.EqualFold(tok, "keep-alive"):
					keepAlive = true
				default:
					h.conn = append(h.conn, http.CanonicalHeaderKey(tok))
				}
			}
		case ExchangeField:
			h.Tokens++
			h.Token = f.Value
		}
		h.fields = append(h.fields, f)
	}
	if h.Chunked && h.Length >= 0 {
		return errMalformedResponse // §4.4: framed one way, never both
	}
	if http10 && !keepAlive {
		h.Close = true // RFC 9112 §9.3
	}
	return nil
}

// HasBody reports whether the response to a request with this method has a
// body: not for HEAD, 1xx, 204 and 304 (RFC 9112 §6.3), nor a length of 0.
func (h *RespHead) HasBody(method string) bool {
	switch {
	case method == http.MethodHead, h.Status < 200, h.Status == 204, h.Status == 304:
		return false
	}
	return h.Chunked || h.Length != 0
}

// Forwarded reports whether a field of the worker's goes to the client:
// not the hop-by-hop fields (§5.4) nor those Connection names, not the
// reserved fields but AfterBurn-Error (§4.4), and not the framing, which the
// watchdog writes itself.
func (h *RespHead) Forwarded(name string) bool {
	switch {
	case isHopByHop(name), name == "Content-Length", isReserved(name) && name != "Afterburn-Error":
		return false
	case name == "Trailer":
		return h.Chunked // §6.7: trailers come only after chunks
	}
	for _, c := range h.conn {
		if c == name {
			return false
		}
	}
	return true
}

// AppendForwarded appends to dst the fields that go to the client
// (Forwarded), in the worker's order: CopyFields without a header.
func (h *RespHead) AppendForwarded(dst []RespField) []RespField {
	for _, f := range h.fields {
		if h.Forwarded(f.Name) {
			dst = append(dst, f)
		}
	}
	return dst
}

// Has reports whether the head has a field name (canonical).
func (h *RespHead) Has(name string) bool {
	for _, f := range h.fields {
		if f.Name == name {
			return true
		}
	}
	return false
}

// CopyFields adds the fields that go to the client (forwarded) to out, every
// value in order, and extra after them; the values share one allocation, and
// the names and values that are pieces of the head one copy of it (RespHead
// says why).
func (h *RespHead) CopyFields(out http.Header, extra ...RespField) {
	vals := make([]string, len(h.fields)+len(extra))
	owned := strings.Clone(h.block)
	add := func(i int, f RespField) {
		f.Name, f.Value = h.own(owned, f.Name), h.own(owned, f.Value)
		vals[i] = f.Value
		if old, ok := out[f.Name]; ok {
			out[f.Name] = append(old, f.Value)
		} else {
			out[f.Name] = vals[i : i+1 : i+1]
		}
	}
	for i, f := range h.fields {
		if h.Forwarded(f.Name) {
			add(i, f)
		}
	}
	for i, f := range extra {
		add(len(h.fields)+i, f)
	}
}

// own returns s from owned, a copy of h.block, when s is a piece of the
// block; any other string is returned as it is.
func (h *RespHead) own(owned, s string) string {
	if len(s) == 0 || len(h.block) == 0 {
		return s
	}
	off := uintptr(unsafe.Pointer(unsafe.StringData(s))) - uintptr(unsafe.Pointer(unsafe.StringData(h.block)))
	if off >= uintptr(len(h.block)) {
		return s
	}
	return owned[off : off+uintptr(len(s))]
}

// LengthValue is the Content-Length to send for a body of h.length bytes:
// the worker's own field when it is already in shortest form.
func (h *RespHead) LengthValue() string {
	if h.lengthAs == "0" || h.lengthAs[0] != '0' {
		return h.lengthAs
	}
	return strconv.FormatInt(h.Length, 10)
}

// readTrailer reads the trailer section after a chunked body's last chunk
// into h.trailers.
func (h *RespHead) readTrailer(br *bufio.Reader) error {
	raw, spans, _, err := readFieldBlock(br, nil, nil, false)
	if err == io.EOF {
		err = io.ErrUnexpectedEOF // the last chunk came; its end did not
	}
	if err != nil {
		return err
	}
	block := string(raw)
	for _, s := range spans {
		h.Trailers = append(h.Trailers, RespField{canonicalName(block[s.name0:s.name1]), block[s.value0:s.value1]})
	}
	return nil
}

// readFieldBlock appends to raw the lines of a head (a status line first,
// when statusLine) or of a trailer section, up to and including the empty
// line, and to spans where each field line's name and value lie. It reports
// whether the status line says HTTP/1.0.
func readFieldBlock(br *bufio.Reader, raw []byte, spans []fieldSpan, statusLine bool) ([]byte, []fieldSpan, bool, error) {
	raw, err := readBlock(br, raw)
	if err != nil {
		return raw, spans, false, err
	}
	return parseBlock(raw, spans, statusLine)
}

// readBlock appends to raw the bytes of br up to and including the first
// empty line (a bare LF ends a line here; parseBlock refuses it). When br
// already holds the whole block, as it does for a response written in one
// write (§6.1), it is taken in one copy; otherwise line by line.
func readBlock(br *bufio.Reader, raw []byte) ([]byte, error) {
	if _, err := br.Peek(1); err != nil {
		return raw, err
	}
	buf, _ := br.Peek(br.Buffered())
	if n := blockEnd(buf); n > 0 && n <= maxResponseHead {
		raw = append(raw, buf[:n]...)
		br.Discard(n)
		return raw, nil
	}
	start := len(raw)
	for {
		line := len(raw)
		for {
			frag, err := br.ReadSlice('\n')
			raw = append(raw, frag...)
			if len(raw)-start > maxResponseHead {
				return raw, errMalformedResponse
			}
			if err == nil {
				break
			}
			if err != bufio.ErrBufferFull {
				if err == io.EOF {
					err = io.ErrUnexpectedEOF // Peek saw a byte: the block had begun
				}
				return raw, err
			}
		}
		if text := raw[line:]; len(text) == 1 || len(text) == 2 && text[0] == '\r' {
			return raw, nil
		}
	}
}

// blockEnd is the length of the field block at the start of buf, through
// its empty line, or 0 when buf does not hold all of it. It goes line by
// line (a bare LF ends a line here too; parseBlock refuses it): a search
// for CRLFCRLF costs several times as much as the few lines of a head.
func blockEnd(buf []byte) int {
	for i := 0; ; {
		j := bytes.IndexByte(buf[i:], '\n')
		switch {
		case j < 0:
			return 0
		case j == 0 || j == 1 && buf[i] == '\r':
			return i + j + 1
		}
		i += j + 1
	}
}

// parseBlock checks the lines of raw, a block readBlock read, and appends
// to spans where each field line's name and value lie. It reports whether
// the status line, when statusLine, says HTTP/1.0.
func parseBlock(raw []byte, spans []fieldSpan, statusLine bool) ([]byte, []fieldSpan, bool, error) {
	http10 := false
	for start, first := 0, true; ; first = false {
		i := bytes.IndexByte(raw[start:], '\n')
		if i < 1 || raw[start+i-1] != '\r' {
			return raw, spans, false, errMalformedResponse // a bare LF (§4.3 rule 1)
		}
		text := raw[start : start+i-1]
		switch {
		case first && statusLine:
			var ok bool
			if http10, ok = parseStatusLine(text); !ok {
				return raw, spans, false, errMalformedResponse
			}
		case len(text) == 0:
			if start+i+1 != len(raw) {
				return raw, spans, false, errMalformedResponse // readBlock stops at the empty line
			}
			return raw, spans, http10, nil
		default:
			s, ok := parseFieldLine(text)
			if !ok {
				return raw, spans, false, errMalformedResponse
			}
			s.name0, s.name1, s.value0, s.value1 = s.name0+start, s.name1+start, s.value0+start, s.value1+start
			spans = append(spans, s)
		}
		start += i + 1
	}
}

// parseStatusLine checks `HTTP/1.1 SP 3DIGIT [SP reason-phrase]` (PROTOCOL.md
// §4.4; an HTTP/1.0 status line is accepted, and one without the space
// before an empty reason, RFC 9112 §4), and reports HTTP/1.0. The reason is
// not read: net/http writes its own.
func parseStatusLine(text []byte) (http10, ok bool) {
	if len(text) < 12 || string(text[:7]) != "HTTP/1." || (text[7] != '1' && text[7] != '0') || text[8] != ' ' {
		return false, false
	}
	if text[9] < '1' || text[9] > '9' || text[10] < '0' || text[10] > '9' || text[11] < '0' || text[11] > '9' {
		return false, false
	}
	if len(text) > 12 && text[12] != ' ' {
		return false, false
	}
	for _, c := range text[12:] {
		if c < ' ' && c != '\t' || c == 0x7f {
			return false, false // a bare CR, or a NUL, in the reason phrase
		}
	}
	return text[7] == '0', true
}

// parseFieldLine checks one field line without its CRLF (the rules of
// PROTOCOL.md §4.3 for requests: a token name right before the colon, no
// obs-fold, no control character in the value) and says where its name and
// its value, without surrounding whitespace, lie.
func parseFieldLine(text []byte) (fieldSpan, bool) {
	colon := 0
	for colon < len(text) && text[colon] != ':' {
		if !IsTokenByte(text[colon]) {
			return fieldSpan{}, false // whitespace before the colon, obs-fold, or not a token
		}
		colon++
	}
	if colon == 0 || colon == len(text) {
		return fieldSpan{}, false
	}
	v0, v1 := colon+1, len(text)
	for v0 < v1 && (text[v0] == ' ' || text[v0] == '\t') {
		v0++
	}
	for v1 > v0 && (text[v1-1] == ' ' || text[v1-1] == '\t') {
		v1--
	}
	if !ValidValue(text[v0:v1]) {
		return fieldSpan{}, false
	}
	return fieldSpan{0, colon, v0, v1}, true
}

// ValidValue reports whether a field value holds no control byte but
// HTAB (no CR, LF, NUL or DEL; obs-text is allowed), RFC 9110 §5.5. Eight
// bytes are looked at a time: a word with no byte below 0x20 and none equal
// to 0x7f passes whole (the bit tricks find whether any byte is, exactly),
// and only a word with one, a tab perhaps, is looked at byte by byte. An
// exchange token alone is 32 bytes of value.
func ValidValue(v []byte) bool {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	for len(v) >= 8 {
		x := binary.LittleEndian.Uint64(v)
		del := x ^ (0x7f * ones)
		if ((x-0x20*ones)&^x|(del-ones)&^del)&highs != 0 && !validBytes(v[:8]) {
			return false
		}
		v = v[8:]
	}
	return validBytes(v)
}

func validBytes(v []byte) bool {
	for _, c := range v {
		if c < ' ' && c != '\t' || c == 0x7f {
			return false
		}
	}
	return true
}

// tokenBytes are RFC 9110's tchar.
var tokenBytes = func() (t [256]bool) {
	for c := range 256 {
		t[c] = 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
			c < 0x80 && strings.IndexByte("!#$%&'*+-.^_`|~", byte(c)) >= 0
	}
	return t
}()

// IsTokenByte reports whether c is an RFC 9110 tchar.
func IsTokenByte(c byte) bool { return tokenBytes[c] }

// spelledNames are names libraries write in a case net/http does not key by
// (the spec's own spelling, §4.6, §8.1), canonical: found here, they cost
// no allocation.
var spelledNames = []string{ExchangeField, "Afterburn-Error", "Afterburn-Protocol", "Afterburn-Library", "Afterburn-Capabilities"}

// specSpellings are spelledNames as the spec and the libraries write them,
// in the same order: matched exactly first, they cost no case folding.
var specSpellings = []string{"AfterBurn-Exchange", "AfterBurn-Error", "AfterBurn-Protocol", "AfterBurn-Library", "AfterBurn-Capabilities"}

// canonicalName is http.CanonicalHeaderKey(name) for a token, without
// allocating when the worker already wrote it that way, as libraries do.
func canonicalName(name string) string {
	upper := true
	for i := 0; i < len(name); i++ {
		c := name[i]
		if upper && 'a' <= c && c <= 'z' || !upper && 'A' <= c && c <= 'Z' {
			return recase(name)
		}
		upper = c == '-'
	}
	return name // canonical already, as most names come
}

// recase is canonicalName of a name not in canonical case.
func recase(name string) string {
	for i, s := range specSpellings {
		if name == s {
			return spelledNames[i] // as libraries write them: no case folding
		}
	}
	for _, s := range spelledNames {
		if len(s) == len(name) && strings.EqualFold(s, name) {
			return s
		}
	}
	return http.CanonicalHeaderKey(name)
}

// RespBody reads a response body from the worker's reader: h.length bytes,
// or chunks to the last one, then the trailer section into h.trailers. It
// returns io.ErrUnexpectedEOF when the pipe ends first (§8.4).
type RespBody struct {
	br      *bufio.Reader
	h       *RespHead
	left    int64
	chunks  io.Reader // nil for a body of known length
	trailed bool
}

// Begin makes b the body of the response whose head h was just read from br.
func (b *RespBody) Begin(br *bufio.Reader, h *RespHead) {
	*b = RespBody{br: br, h: h, left: h.Length}
	if h.Chunked {
		b.chunks = httputil.NewChunkedReader(br)
	}
}

func (b *RespBody) Read(p []byte) (int, error) {
	if b.chunks != nil {
		n, err := b.chunks.Read(p)
		if err == io.EOF && !b.trailed {
			b.trailed = true
			if terr := b.h.readTrailer(b.br); terr != nil {
				return n, terr
			}
		}
		return n, err
	}
	if b.left <= 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.br.Read(p)
	b.left -= int64(n)
	switch {
	case b.left == 0:
		err = io.EOF
	case err == io.EOF:
		err = io.ErrUnexpectedEOF
	}
	return n, err
}
