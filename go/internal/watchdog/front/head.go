package front

// A response's head, chunks and trailers, written as net/http's server
// writes them (server.go: chunkWriter.writeHeader, writeStatusLine,
// extraHeader.Write, chunkWriter.Write and close). Two writers stand in for
// net/http's ResponseWriter and share these: the front's (response.go,
// PROTOCOL.md §10.6) and that of an exchange whose body is spliced
// (exchange/hijack.go, §6.1). A client must not tell either from net/http.

import (
	"bufio"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/afterburn-dev/afterburn/go/internal/watchdog/wire"
)

// Head is a response head to write as net/http writes it in answer to
// Request. The caller has decided the body's framing; Write decides the
// connection's fate and the fields net/http adds or drops for it.
type Head struct {
	Request *http.Request
	Status  int
	Header  http.Header
	// Fields stand in for Header when it is nil: a worker's fields as the
	// exchange forwards them (WriteWorkerHead), sorted by name, each
	// value its own line, every one already checked (§4.4).
	Fields []wire.RespField
	// Length is the Content-Length net/http adds for a body it measured
	// itself (a body of unknown length it held whole); -1 for none. A
	// Content-Length in Header is written among the fields.
	Length int
	// Chunked: the body follows in chunks (WriteChunk, WriteLastChunk).
	Chunked bool
	// NoKeepAlives: the server is shutting down, so the connection closes
	// after this response (net/http's !doKeepAlives()).
	NoKeepAlives bool
}

// Bodyless reports whether a response with status code to a request with
// method carries no body, whatever its fields say (RFC 9112 §6.3): HEAD,
// 1xx, 204 and 304.
func Bodyless(method string, code int) bool {
	return method == http.MethodHead || !bodyAllowed(code)
}

// bodyAllowed is net/http's bodyAllowedForStatus.
func bodyAllowed(code int) bool {
	return code >= 200 && code != http.StatusNoContent && code != http.StatusNotModified
}

// Write writes the status line, the header's fields sorted, then the
// fields net/http adds in its order (Date unless set, Content-Length of
// Length, Connection, Transfer-Encoding: chunked), and the empty line. It
// reports whether the connection closes after the response: when the
// client asked for it (r.Close, or close in its first Connection field),
// an HTTP/1.0 client did not ask for keep-alive or gets a body that only
// the connection's end delimits, the header's first Connection value is
// exactly "close", or keep-alives are off. A closing response drops the
// header's Connection field for net/http's own "close" (none to HTTP/1.0),
// unless the header's already says close; an HTTP/1.0 keep-alive response
// says keep-alive when the header has no Connection.
func (hd Head) Write(bw *bufio.Writer) (closeAfter bool) {
	r, code := hd.Request, hd.Status
	proto11 := r.ProtoAtLeast(1, 1)
	hasLength := hd.Length >= 0 || hd.first("Content-Length") != ""
	connection := hd.first("Connection")
	var own string // the Connection value written after the header's fields
	wants10KeepAlive := r.ProtoMajor == 1 && r.ProtoMinor == 0 && spacedToken(firstValue(r.Header, "Connection"), "keep-alive")
	if wants10KeepAlive && (r.Method == http.MethodHead || hasLength || !bodyAllowed(code)) {
		if !hd.has("Connection") {
			own = "keep-alive"
		}
	} else if !proto11 || wantsClose(r) {
		closeAfter = true
	}
	if connection == "close" || hd.NoKeepAlives {
		closeAfter = true
	}
	if !proto11 && !Bodyless(r.Method, code) && !hasLength {
		closeAfter = true // no chunks for HTTP/1.0: the body ends with the connection
	}
	omit := omitTransferEncoding
	if closeAfter && (hd.NoKeepAlives || !spacedToken(connection, "close")) {
		omit |= omitConnection
		if proto11 {
			own = "close"
		}
	}
	switch {
	case code == http.StatusNotModified:
		omit |= omitContentLength | omitContentType
	case !bodyAllowed(code), hd.Chunked:
		omit |= omitContentLength
	}

	bw.WriteString(statusLine(proto11, code))
	if hd.Header != nil {
		writeFields(bw, hd.Header, omit)
	} else {
		writeFieldList(bw, hd.Fields, omit)
	}
	b := bw.AvailableBuffer()
	if !hd.has("Date") {
		b = append(b, "Date: "...)
		b = time.Now().UTC().AppendFormat(b, http.TimeFormat)
		b = append(b, "\r\n"...)
	}
	if hd.Length >= 0 {
		b = append(b, "Content-Length: "...)
		b = strconv.AppendInt(b, int64(hd.Length), 10)
		b = append(b, "\r\n"...)
	}
	if own != "" {
		b = append(b, "Connection: "...)
		b = append(b, own...)
		b = append(b, "\r\n"...)
	}
	if hd.Chunked {
		b = append(b, "Transfer-Encoding: chunked\r\n"...)
	}
	bw.Write(append(b, "\r\n"...))
	return closeAfter
}

// protos are the status lines' versions, HTTP/1.1's first.
var protos = [2]string{"HTTP/1.1 ", "HTTP/1.0 "}

// statusLines are the status lines net/http writes (writeStatusLine), made
// once: HTTP/1.1's and HTTP/1.0's for each code from 100 to 599.
var statusLines = func() (lines [2][500]string) {
	for i, proto := range protos {
		for code := 100; code < 600; code++ {
			lines[i][code-100] = makeStatusLine(proto, code)
		}
	}
	return lines
}()

func makeStatusLine(proto string, code int) string {
	text := http.StatusText(code)
	if text == "" {
		text = "status code " + strconv.Itoa(code)
	}
	return proto + strconv.Itoa(code) + " " + text + "\r\n"
}

// statusLine is the status line for code, from statusLines when it has it.
func statusLine(proto11 bool, code int) string {
	i := 0
	if !proto11 {
		i = 1
	}
	if code >= 100 && code < 600 {
		return statusLines[i][code-100]
	}
	return makeStatusLine(protos[i], code)
}

// field is the first value of the field name (canonical) in Header or
// Fields, and whether there is one; a name Header maps to no value counts,
// as net/http's lookups count it.
func (hd *Head) field(name string) (string, bool) {
	if hd.Header != nil {
		vv, ok := hd.Header[name]
		if len(vv) == 0 {
			return "", ok
		}
		return vv[0], true
	}
	for _, f := range hd.Fields {
		if f.Name == name {
			return f.Value, true
		}
	}
	return "", false
}

// first is the first value of the field name, "" when there is none.
func (hd *Head) first(name string) string {
	v, _ := hd.field(name)
	return v
}

// has reports whether Header or Fields has the field name.
func (hd *Head) has(name string) bool {
	_, ok := hd.field(name)
	return ok
}

// firstValue is h.Get(key) for a key already canonical, without
// canonicalizing it again (net/http's Header.get).
func firstValue(h http.Header, key string) string {
	if v := h[key]; len(v) > 0 {
		return v[0]
	}
	return ""
}

// WriteChunk writes p as one chunk, as net/http's chunkWriter does. An
// empty p writes nothing: a chunk of size 0 would end the body.
func WriteChunk(bw *bufio.Writer, p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	b := strconv.AppendInt(bw.AvailableBuffer(), int64(len(p)), 16)
	bw.Write(append(b, "\r\n"...))
	bw.Write(p)
	_, err := bw.WriteString("\r\n") // bufio.Writer keeps the first error
	return len(p), err
}

// WriteLastChunk ends a chunked body: the chunk of size 0, the trailers h
// holds under http.TrailerPrefix (how the exchange passes the worker's,
// §6.7), and the empty line.
func WriteLastChunk(bw *bufio.Writer, h http.Header) {
	bw.WriteString("0\r\n")
	var t http.Header
	for k, vv := range h {
		if name, ok := strings.CutPrefix(k, http.TrailerPrefix); ok {
			if t == nil {
				t = make(http.Header)
			}
			t[name] = vv
		}
	}
	if t != nil {
		t.Write(bw)
	}
	bw.WriteString("\r\n")
}

// omitted is the set of fields net/http leaves out of a head's header
// (delHeader in chunkWriter.writeHeader): the framing it writes itself,
// Connection when it writes its own, and what a bodyless status must not
// carry (suppressedHeaders).
type omitted uint8

const (
	omitTransferEncoding omitted = 1 << iota
	omitConnection
	omitContentLength
	omitContentType
	omitAll
)

func (o omitted) has(key string) bool {
	switch key {
	case "Transfer-Encoding":
		return o&omitTransferEncoding != 0
	case "Connection":
		return o&omitConnection != 0
	case "Content-Length":
		return o&omitContentLength != 0
	case "Content-Type":
		return o&omitContentType != 0
	}
	return false
}

// omitMaps are the sets as Header.WriteSubset takes them, one per value.
var omitMaps = func() (m [omitAll]map[string]bool) {
	for o := range omitAll {
		m[o] = map[string]bool{}
		for _, k := range []string{"Transfer-Encoding", "Connection", "Content-Length", "Content-Type"} {
			if o.has(k) {
				m[o][k] = true
			}
		}
	}
	return m
}()

// writeFields writes h as net/http's Header.WriteSubset(bw, omitted)
// does, sorted, one line per value, without its per-value replacer and
// trimming when no name or value needs them (the exchange's fields come
// checked from the worker's head, §4.4), and through WriteSubset itself
// when one does.
func writeFields(bw *bufio.Writer, h http.Header, omit omitted) {
	var arr [24]string
	keys := arr[:0]
	for k, vv := range h {
		if len(vv) == 0 || omit.has(k) {
			continue
		}
		if !plainField(k, vv) {
			h.WriteSubset(bw, omitMaps[omit])
			return
		}
		keys = append(keys, k)
	}
	slices.Sort(keys)
	// Appended in place into bw's free space, one Write (as the exchange
	// writes a request head).
	b := bw.AvailableBuffer()
	for _, k := range keys {
		for _, v := range h[k] {
			b = append(b, k...)
			b = append(b, ": "...)
			b = append(b, v...)
			b = append(b, "\r\n"...)
		}
	}
	bw.Write(b)
}

// writeFieldList writes fields, sorted and checked (Head.Fields), less
// those omit names, as writeFields writes a header holding them.
func writeFieldList(bw *bufio.Writer, fields []wire.RespField, omit omitted) {
	b := bw.AvailableBuffer()
	for _, f := range fields {
		if omit != 0 && omit.has(f.Name) {
			continue
		}
		b = append(b, f.Name...)
		b = append(b, ": "...)
		b = append(b, f.Value...)
		b = append(b, "\r\n"...)
	}
	bw.Write(b)
}

// plainField reports whether net/http would write the field as it is: a
// token name, values without CR or LF and without space or tab at either
// end (WriteSubset replaces the one and trims the other).
func plainField(k string, vv []string) bool {
	if k == "" {
		return false
	}
	for i := 0; i < len(k); i++ {
		if !wire.IsTokenByte(k[i]) {
			return false
		}
	}
	for _, v := range vv {
		if n := len(v); n > 0 && (v[0] == ' ' || v[0] == '\t' || v[n-1] == ' ' || v[n-1] == '\t') {
			return false
		}
		if strings.IndexByte(v, '\n') >= 0 || strings.IndexByte(v, '\r') >= 0 {
			return false
		}
	}
	return true
}

// wantsClose is net/http's Request.wantsClose, which decides whether the
// response closes the connection: r.Close (a close token among the
// Connection fields' comma-separated lists), or close in the first
// Connection field bounded by spaces, tabs or commas (spacedToken), which
// is laxer: "Connection: x close" closes the connection but does not set
// r.Close.
func wantsClose(r *http.Request) bool {
	return r.Close || spacedToken(firstValue(r.Header, "Connection"), "close")
}

// spacedToken is net/http's hasToken: token (lower case) in v, compared
// without regard to ASCII case, with a space, tab, comma or either end on
// each side.
func spacedToken(v, token string) bool {
	if len(token) > len(v) || token == "" {
		return false
	}
	boundary := func(b byte) bool { return b == ' ' || b == ',' || b == '\t' }
	for sp := 0; sp <= len(v)-len(token); sp++ {
		if b := v[sp]; b != token[0] && b|0x20 != token[0] {
			continue
		}
		if sp > 0 && !boundary(v[sp-1]) {
			continue
		}
		if end := sp + len(token); end != len(v) && !boundary(v[end]) {
			continue
		}
		if strings.EqualFold(v[sp:sp+len(token)], token) {
			return true
		}
	}
	return false
}
