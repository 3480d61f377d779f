package afterburn

import (
	"bytes"
	"encoding/binary"
	"io"
	"math"
	"net/http"
	"net/textproto"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// fieldKind marks the field lines the library interprets itself.
type fieldKind uint8

const (
	fieldPlain fieldKind = iota
	fieldHost
	fieldContentLength
	fieldTransferEncoding
	fieldTrailer
	fieldRequestID // PROTOCOL.md §5.1, never shown to handlers (§5.3)
	fieldTimeout   // PROTOCOL.md §5.2, never shown to handlers (§5.3)
	fieldHandshake // PROTOCOL.md §3.1
	fieldExchange  // PROTOCOL.md §4.6, never shown to handlers (§5.3)
)

// fieldPos locates one field line in conn.head.
type fieldPos struct {
	name, nameEnd, value, valueEnd int
	kind                           fieldKind
}

// classify recognises the interpreted field names, case-insensitively (RFC 9110 §5.1).
// name is a token (parseFieldLine checked it), which lets tokenEqualFold compare it.
func classify(name []byte) fieldKind {
	switch len(name) {
	case 4:
		if tokenEqualFold(name, "host") {
			return fieldHost
		}
	case 7:
		if tokenEqualFold(name, "trailer") {
			return fieldTrailer
		}
	case 14:
		if tokenEqualFold(name, "content-length") {
			return fieldContentLength
		}
	case 17:
		if tokenEqualFold(name, "transfer-encoding") {
			return fieldTransferEncoding
		}
	case 18:
		if tokenEqualFold(name, "afterburn-exchange") {
			return fieldExchange
		}
	case 19:
		if tokenEqualFold(name, "afterburn-handshake") {
			return fieldHandshake
		}
	case 20:
		if tokenEqualFold(name, "afterburn-request-id") {
			return fieldRequestID
		}
		if tokenEqualFold(name, "afterburn-timeout-ms") {
			return fieldTimeout
		}
	}
	return fieldPlain
}

// tokenEqualFold reports whether the token b equals s, a string of lower-case letters
// and '-', ignoring case. Setting bit 0x20 lower-cases a letter and leaves '-' as it
// is; the only other byte it maps to a letter or '-' is one no token holds (CR to
// '-'), so eight bytes are compared at a time: a head's field names are compared
// once each, and the four AfterBurn names are 18 to 20 bytes long.
func tokenEqualFold(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	i := 0
	for ; i+8 <= len(b); i += 8 {
		if binary.LittleEndian.Uint64(b[i:])|0x2020202020202020 != le64(s[i:]) {
			return false
		}
	}
	for ; i < len(b); i++ {
		if b[i]|0x20 != s[i] {
			return false
		}
	}
	return true
}

// le64 is binary.LittleEndian.Uint64 of a string's first eight bytes.
func le64(s string) uint64 {
	_ = s[7]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}

// asciiEqualFold compares b with the lower-case ASCII string s, ignoring case.
func asciiEqualFold(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != s[i] {
			return false
		}
	}
	return true
}

// headState collects what the field lines of one head say about its framing.
type headState struct {
	hosts       int
	clen        int64 // -1 without Content-Length
	chunked     bool
	timeout     int64 // milliseconds; -1 without AfterBurn-Timeout-Ms
	requestID   int   // index into fields, -1 without
	handshake   int   // index into fields, -1 without
	exchange    int   // index into fields, -1 without
	plain       int   // fields shown to handlers in r.Header
	haveTrailer bool
	complete    bool // the empty line ending the head was read
}

// readRequest reads and checks one request head (PROTOCOL.md §4.3) and returns the
// exchange it starts, with its *http.Request ready for the handler. It returns io.EOF
// when the stream ends cleanly before a request (§9.4) and a *protocolError when the
// request is malformed (§8.8).
func (c *conn) readRequest() (*exchange, error) {
	st := headState{clen: -1, timeout: -1, requestID: -1, handshake: -1, exchange: -1}
	ex, err := c.readHead(&st)
	if perr, ok := err.(*protocolError); ok {
		if st.requestID >= 0 {
			// PROTOCOL.md §8.1: the error body names the request id when it is known.
			f := &c.fields[st.requestID]
			perr.requestID = string(c.head[f.value:f.valueEnd])
		}
		if st.complete && st.exchange >= 0 {
			// PROTOCOL.md §4.6: a rejection written after the whole head was read
			// SHOULD carry the exchange token. One found inside a head that failed
			// on the way is not echoed: that head was never a request.
			f := &c.fields[st.exchange]
			perr.token = string(c.head[f.value:f.valueEnd])
		}
	}
	return ex, err
}

func (c *conn) readHead(st *headState) (*exchange, error) {
	max := c.lim.maxHead
	line, err := c.readLine(max)
	if err != nil {
		if err == io.EOF {
			return nil, io.EOF
		}
		return nil, c.headLineError(err, "the request line")
	}
	used := len(line) + 2
	c.head = append(c.head[:0], line...)
	methodEnd, targetStart, minor, perr := parseRequestLine(line)
	if perr != nil {
		return nil, perr
	}
	targetEnd := len(line) - len(" HTTP/1.1")

	c.fields = c.fields[:0]
	for {
		// PROTOCOL.md §7.3 and rule 11: the head is the request line and the field
		// lines with their CRLFs; the empty line that ends it is not counted.
		line, err := c.readLine(max2(max-used, 2))
		if err != nil {
			return nil, c.headLineError(err, "the request head")
		}
		if len(line) == 0 {
			st.complete = true
			break
		}
		used += len(line) + 2
		if used > max {
			return nil, headersTooLarge(max)
		}
		off := len(c.head)
		c.head = append(c.head, line...)
		f, perr := parseFieldLine(line, off)
		if perr != nil {
			return nil, perr
		}
		if perr := st.add(&f, line[f.value-off:f.valueEnd-off], len(c.fields)); perr != nil {
			return nil, perr
		}
		c.fields = append(c.fields, f)
	}
	var headRead time.Time
	if st.timeout >= 0 {
		// PROTOCOL.md §5.2: the deadline counts from the moment the head was read,
		// on the monotonic clock (time.Now carries a monotonic reading).
		headRead = time.Now()
	}
	if st.hosts == 0 {
		return nil, badRequest("no Host field") // rule 10
	}
	if st.clen > 0 && c.lim.maxBody > 0 && st.clen > c.lim.maxBody {
		return nil, bodyTooLarge(c.lim.maxBody) // rule 12, before any body byte
	}
	return c.newExchange(st, methodEnd, targetStart, targetEnd, minor, headRead)
}

// headLineError maps a readLine error inside a head to its §4.3 rule.
func (c *conn) headLineError(err error, where string) *protocolError {
	switch err {
	case errTooLong:
		return headersTooLarge(c.lim.maxHead) // rule 11
	case errBareLF:
		return badRequest("a line of " + where + " ends in a bare LF") // rule 1
	case errBareCR:
		return badRequest("a line of " + where + " has a bare CR") // rules 1 and 5
	}
	return truncated(where, err)
}

// parseRequestLine checks rule 2: token SP request-target SP HTTP/1.1, single spaces.
func parseRequestLine(line []byte) (methodEnd, targetStart, minor int, perr *protocolError) {
	bad := func(why string) *protocolError {
		return badRequest(why + " in request line " + quote(line))
	}
	sp := bytes.IndexByte(line, ' ')
	if sp < 0 {
		return 0, 0, 0, bad("no space")
	}
	if !isToken(line[:sp]) {
		return 0, 0, 0, bad("a method that is not a token")
	}
	rest := line[sp+1:]
	sp2 := bytes.IndexByte(rest, ' ')
	if sp2 <= 0 {
		return 0, 0, 0, bad("no request-target")
	}
	target, version := rest[:sp2], rest[sp2+1:]
	switch string(version) {
	case "HTTP/1.1":
		minor = 1
	case "HTTP/1.0": // rule 2: an HTTP/1.0 request MAY be accepted
		minor = 0
	default:
		return 0, 0, 0, bad("a version other than HTTP/1.1")
	}
	for _, b := range target {
		if b < 0x21 || b == 0x7f {
			return 0, 0, 0, bad("a control character")
		}
	}
	// PROTOCOL.md §4.2: origin-form, or the asterisk-form of the handshake. The
	// absolute-form is accepted as RFC 9112 §3.2.2 asks of every server.
	switch {
	case target[0] == '/':
	case len(target) == 1 && target[0] == '*':
		if string(line[:sp]) != http.MethodOptions {
			return 0, 0, 0, bad("an asterisk-form target outside OPTIONS")
		}
	case bytes.Contains(target, []byte("://")):
		if _, err := url.ParseRequestURI(string(target)); err != nil {
			return 0, 0, 0, bad("a bad absolute-form target")
		}
	default:
		return 0, 0, 0, bad("a request-target that is not in origin-form")
	}
	return sp, sp + 1, minor, nil
}

// parseFieldLine checks rules 3, 4 and 5 on one field line (CRLF already removed and
// checked by readLine) whose first byte is at off in conn.head.
func parseFieldLine(line []byte, off int) (fieldPos, *protocolError) {
	if line[0] == ' ' || line[0] == '\t' {
		return fieldPos{}, badRequest("a field line starts with whitespace (obs-fold): " + quote(line)) // rule 4
	}
	colon := bytes.IndexByte(line, ':')
	if colon < 0 {
		return fieldPos{}, badRequest("a field line has no colon: " + quote(line)) // rule 3
	}
	name := line[:colon]
	if !isToken(name) {
		return fieldPos{}, badRequest("a field name is not a token: " + quote(name)) // rule 3
	}
	vs, ve := colon+1, len(line)
	for vs < ve && (line[vs] == ' ' || line[vs] == '\t') {
		vs++
	}
	for ve > vs && (line[ve-1] == ' ' || line[ve-1] == '\t') {
		ve--
	}
	// Rule 5: CR was refused by readLine and LF ends the line; NUL is left.
	if bytes.IndexByte(line[vs:ve], 0) >= 0 {
		return fieldPos{}, badRequest("the value of " + quote(name) + " has a NUL byte")
	}
	return fieldPos{name: off, nameEnd: off + colon, value: off + vs, valueEnd: off + ve, kind: classify(name)}, nil
}

// add applies rules 6, 7, 8, 10, 13 and 14 as each field line arrives.
func (st *headState) add(f *fieldPos, value []byte, index int) *protocolError {
	switch f.kind {
	case fieldHost:
		st.hosts++
		if st.hosts > 1 {
			return badRequest("more than one Host field") // rule 10
		}
	case fieldContentLength:
		if st.clen >= 0 {
			return badRequest("more than one Content-Length field") // rule 6
		}
		if st.chunked {
			return badRequest("both Content-Length and Transfer-Encoding") // rule 7
		}
		n, ok := parseDigits(value)
		if !ok {
			return badRequest("Content-Length " + quote(value)) // rule 6
		}
		st.clen = n
		st.plain++ // net/http keeps Content-Length in r.Header
	case fieldTransferEncoding:
		if st.clen >= 0 {
			return badRequest("both Content-Length and Transfer-Encoding") // rule 7
		}
		if st.chunked {
			// A second line makes the coding list "chunked, …": not exactly chunked.
			return notImplemented(append([]byte("chunked, "), value...)) // rule 8
		}
		if !asciiEqualFold(value, "chunked") {
			return notImplemented(value) // rule 8
		}
		st.chunked = true
	case fieldTimeout:
		if !isDigits(value) {
			return badRequest("AfterBurn-Timeout-Ms " + quote(value)) // rule 13
		}
		if st.timeout < 0 {
			st.timeout = saturatingDigits(value)
		}
	case fieldRequestID:
		if st.requestID < 0 {
			st.requestID = index
		}
	case fieldHandshake:
		if st.handshake < 0 {
			st.handshake = index
		}
	case fieldExchange:
		if st.exchange >= 0 {
			return badRequest("more than one AfterBurn-Exchange field") // rule 14
		}
		if !isExchangeToken(value) {
			return badRequest("AfterBurn-Exchange " + quote(value)) // rule 14
		}
		st.exchange = index
	case fieldTrailer:
		st.haveTrailer = true
		st.plain++
	default:
		st.plain++
	}
	return nil
}

func isDigits(b []byte) bool {
	if len(b) == 0 {
		return false
	}
	for _, c := range b {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// isExchangeToken reports whether b is an exchange token: 1–64 characters from
// 0-9 a-z A-Z (PROTOCOL.md §4.3 rule 14, §4.6).
func isExchangeToken(b []byte) bool {
	if len(b) == 0 || len(b) > 64 {
		return false
	}
	for _, c := range b {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z') {
			return false
		}
	}
	return true
}

// saturatingDigits parses digits, capping at the largest useful number of milliseconds.
func saturatingDigits(b []byte) int64 {
	const limit = math.MaxInt64 / int64(time.Millisecond)
	var n int64
	for _, c := range b {
		n = n*10 + int64(c-'0')
		if n > limit {
			return limit
		}
	}
	return n
}

// newExchange builds the *http.Request the handler sees from a checked head.
func (c *conn) newExchange(st *headState, methodEnd, targetStart, targetEnd, minor int, headRead time.Time) (*exchange, error) {
	// One string holds every string of the request; the field values are slices of it.
	s := string(c.head)
	ex := &exchange{c: c}
	var base http.Request
	r := &base
	r.Method = s[:methodEnd]
	r.RequestURI = s[targetStart:targetEnd]
	u, err := requestURL(r.RequestURI, &ex.url)
	if err != nil {
		return nil, badRequest("request-target " + strconv.Quote(r.RequestURI))
	}
	r.URL = u
	r.Proto, r.ProtoMajor, r.ProtoMinor = "HTTP/1.1", 1, minor
	if minor == 0 {
		r.Proto = "HTTP/1.0"
	}

	if st.handshake >= 0 {
		f := &c.fields[st.handshake]
		ex.isHandshake = true
		ex.handshake = s[f.value:f.valueEnd]
	}
	if st.requestID >= 0 {
		f := &c.fields[st.requestID]
		ex.id = s[f.value:f.valueEnd]
	}
	if st.exchange >= 0 {
		// PROTOCOL.md §4.6: echoed in the response head. A slice of s, so it costs
		// no allocation of its own.
		f := &c.fields[st.exchange]
		ex.token = s[f.value:f.valueEnd]
	}
	if ex.id == "" {
		// PROTOCOL.md §11.1: a legacy watchdog sends no id; the library makes one.
		ex.id = newRequestID()
	}

	h := make(http.Header, st.plain)
	// One backing array for the common single values: the exchange's own for a
	// typical head, so that it costs no allocation of its own.
	values := ex.values[:]
	if st.plain > len(values) {
		values = make([]string, st.plain)
	}
	for i := range c.fields {
		f := &c.fields[i]
		v := s[f.value:f.valueEnd]
		switch f.kind {
		case fieldHost:
			r.Host = v
			continue
		case fieldTransferEncoding, fieldRequestID, fieldTimeout, fieldHandshake, fieldExchange:
			// PROTOCOL.md §5.3: the reserved fields are exposed through RequestID and
			// the context deadline instead; the exchange token is the library's own
			// (§4.6). Transfer-Encoding becomes r.TransferEncoding, as net/http does.
			continue
		case fieldTrailer:
			if st.chunked {
				continue // as net/http: the declared names become r.Trailer's keys
			}
		}
		k := c.canonicalKey(c.head[f.name:f.nameEnd])
		if vv, ok := h[k]; ok {
			h[k] = append(vv, v)
		} else {
			values[0] = v
			h[k] = values[:1:1]
			values = values[1:]
		}
	}
	r.Header = h
	if u.Host != "" {
		r.Host = u.Host // RFC 9112 §3.2.2: absolute-form overrides Host
	}

	switch {
	case st.chunked:
		r.ContentLength = -1
		r.TransferEncoding = []string{"chunked"}
		r.Trailer = make(http.Header)
		if st.haveTrailer {
			for i := range c.fields {
				if f := &c.fields[i]; f.kind == fieldTrailer {
					for _, name := range strings.Split(s[f.value:f.valueEnd], ",") {
						if name = textproto.TrimString(name); isTokenString(name) {
							r.Trailer[http.CanonicalHeaderKey(name)] = nil
						}
					}
				}
			}
		}
		ex.body = body{c: c, ex: ex, chunked: true, trailer: r.Trailer}
		r.Body = &ex.body
	case st.clen > 0:
		r.ContentLength = st.clen
		ex.body = body{c: c, ex: ex, remain: st.clen}
		r.Body = &ex.body
	default:
		// PROTOCOL.md §4.2: a request with neither field has an empty body.
		r.Body = http.NoBody
		ex.body.done = true
	}

	if st.timeout >= 0 {
		ex.deadline = headRead.Add(time.Duration(st.timeout) * time.Millisecond)
		ex.hasDeadline = true
	}
	ex.req = r.WithContext(ex)
	ex.w.init(ex)
	return ex, nil
}

// requestURL builds r.URL, in u for the usual origin-form, without decoding the request-target more than net/http
// would, and without refusing what the conformance vectors require to reach the
// handler raw (a bad percent-escape such as %zz; r.RequestURI always holds the raw
// target).
func requestURL(target string, u *url.URL) (*url.URL, error) {
	switch {
	case target == "*":
		u.Path = "*"
		return u, nil
	case target[0] != '/':
		return url.ParseRequestURI(target)
	}
	p := target
	if i := strings.IndexByte(target, '?'); i >= 0 {
		p, u.RawQuery = target[:i], target[i+1:]
		u.ForceQuery = u.RawQuery == ""
	}
	u.Path = p
	if strings.IndexByte(p, '%') >= 0 {
		if dec, err := url.PathUnescape(p); err == nil {
			u.Path, u.RawPath = dec, p
		}
	}
	return u, nil
}

// canonicalKey returns the canonical form of a field name, reusing the strings of
// names seen before so that steady traffic does not allocate for them.
func (c *conn) canonicalKey(name []byte) string {
	if k, ok := c.canon[string(name)]; ok {
		return k
	}
	k := textproto.CanonicalMIMEHeaderKey(string(name))
	if len(c.canon) < 512 {
		c.canon[string(name)] = k
	}
	return k
}

func quote(b []byte) string {
	const max = 64
	if len(b) > max {
		return strconv.Quote(string(b[:max])) + "…"
	}
	return strconv.Quote(string(b))
}

func max2(a, b int) int {
	if a > b {
		return a
	}
	return b
}
