package afterburn

import (
	"fmt"
	"net/http"
	"net/textproto"
	"slices"
	"strconv"
	"strings"
)

// response is the http.ResponseWriter of one exchange. It also implements
// http.Flusher, and the FlushError and EnableFullDuplex methods that
// http.NewResponseController looks for.
//
// Framing (PROTOCOL.md §4.4): body bytes are held until the handler flushes, returns,
// or writes more than bufferBeforeFraming bytes. A handler that returns first gets
// Content-Length; otherwise the body is chunked, and every Flush sends what was written
// as one chunk, so server-sent events stream (§6.1). A Content-Length the handler sets
// itself is honoured and enforced. HEAD, 204 and 304 responses never carry a body.
type response struct {
	ex     *exchange
	c      *conn
	isHead bool

	header http.Header // the map the handler changes
	sent   http.Header // the header as it was at WriteHeader, once the handler changed it afterwards

	status      int
	wroteHeader bool // the status is decided
	committed   bool // the head is in the write buffer; the framing is decided
	chunked     bool
	bodyless    bool  // HEAD, 204, 304
	clen        int64 // the Content-Length to send, or -1
	written     int64 // body bytes the handler wrote
	trailers    []string
	done        bool  // the handler returned
	err         error // sticky write error
}

func (w *response) init(ex *exchange) {
	w.ex = ex
	w.c = ex.c
	w.isHead = ex.req.Method == http.MethodHead
	w.clen = -1
}

// Header returns the response header map. As with net/http, changing it after
// WriteHeader (or the first Write) has no effect on the head, except for trailers.
func (w *response) Header() http.Header {
	if w.header == nil {
		w.header = make(http.Header)
	}
	if w.wroteHeader && !w.committed && w.sent == nil {
		w.sent = w.header
		w.header = w.header.Clone()
	}
	return w.header
}

func (w *response) WriteHeader(code int) {
	if code < 100 || code > 999 {
		panic(fmt.Sprintf("invalid WriteHeader code %v", code)) // as net/http
	}
	if w.done {
		return
	}
	if w.wroteHeader {
		w.c.logf("[%s] afterburn: superfluous WriteHeader(%d) after WriteHeader(%d)\n", w.ex.id, code, w.status)
		return
	}
	if code < 200 {
		// PROTOCOL.md §4.4: a library MUST NOT send 1xx responses; 100 Continue is
		// the watchdog's job (§5.4).
		return
	}
	w.wroteHeader = true
	w.status = code
	w.bodyless = w.isHead || code == http.StatusNoContent || code == http.StatusNotModified
	if cl := w.header["Content-Length"]; len(cl) > 0 {
		if n, ok := parseDigits([]byte(textproto.TrimString(cl[0]))); ok {
			w.clen = n
		} else {
			w.c.logf("[%s] afterburn: dropping invalid Content-Length %q\n", w.ex.id, cl[0])
		}
	}
	if code == http.StatusNoContent {
		w.clen = -1
	}
}

func (w *response) Write(p []byte) (int, error) {
	if err := w.beforeWrite(len(p)); err != nil || len(p) == 0 {
		return 0, err
	}
	w.written += int64(len(p))
	c := w.c
	if !w.committed || w.chunked {
		if len(c.pend)+len(p) <= cap(c.pend) {
			c.pend = append(c.pend, p...)
			return len(p), nil
		}
		if !w.committed {
			w.commit(false)
		}
	}
	switch {
	case w.bodyless:
		// HEAD: the bytes only served to sniff the Content-Type.
	case w.chunked:
		if len(c.pend) > 0 {
			w.writeChunk(c.pend)
			c.pend = c.pend[:0]
		}
		if len(p) >= cap(c.pend) {
			w.writeChunk(p)
		} else {
			c.pend = append(c.pend, p...)
		}
	default:
		w.writeRaw(p)
	}
	if w.err != nil {
		return 0, w.err
	}
	return len(p), nil
}

// WriteString lets io.WriteString and fmt write small strings without a copy.
func (w *response) WriteString(s string) (int, error) {
	if c := w.c; w.beforeWrite(len(s)) == nil && (!w.committed || w.chunked) && len(c.pend)+len(s) <= cap(c.pend) {
		w.written += int64(len(s))
		c.pend = append(c.pend, s...)
		return len(s), nil
	}
	return w.Write([]byte(s))
}

// beforeWrite decides the status if the handler did not, and refuses a write the
// response cannot carry.
func (w *response) beforeWrite(n int) error {
	if w.done {
		return errAfterHandler
	}
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	if n == 0 {
		return nil
	}
	if w.status == http.StatusNoContent || w.status == http.StatusNotModified {
		return http.ErrBodyNotAllowed
	}
	if w.clen >= 0 && w.written+int64(n) > w.clen {
		return http.ErrContentLength
	}
	return w.err
}

func (w *response) writeRaw(p []byte) {
	if w.err == nil {
		_, w.err = w.c.bw.Write(p)
	}
}

// commit decides the framing and writes the head into the write buffer, followed by
// the body bytes held so far. final says the handler has returned, so the body is
// complete and its length known.
func (w *response) commit(final bool) {
	c := w.c
	w.committed = true
	h := w.sent
	if h == nil {
		h = w.header
	}
	for _, v := range h["Trailer"] {
		for _, name := range strings.Split(v, ",") {
			name = http.CanonicalHeaderKey(textproto.TrimString(name))
			switch name {
			case "", "Content-Length", "Transfer-Encoding", "Trailer", "Afterburn-Exchange":
			default:
				w.trailers = append(w.trailers, name)
			}
		}
	}
	// One pass over the header finds the field lines to write and whether the handler
	// announced trailers by prefix (http.TrailerPrefix), which rules out Content-Length.
	keys, prefixed := w.fieldKeys(h, false)
	if w.sent != nil {
		prefixed = hasPrefixTrailers(w.header)
	}
	switch {
	case w.bodyless:
		if final && w.isHead && w.clen < 0 && w.written > 0 && w.status != http.StatusNotModified && w.status != http.StatusNoContent {
			w.clen = w.written // §4.4: MAY send the length the body would have had
		}
	case w.clen >= 0:
		// The handler's own Content-Length.
	case final && len(w.trailers) == 0 && !prefixed:
		w.clen = int64(len(c.pend))
	default:
		w.chunked = true
	}
	_, haveType := h["Content-Type"]
	sniff := !haveType && len(c.pend) > 0 && w.status != http.StatusNoContent && w.status != http.StatusNotModified

	b := c.bw.AvailableBuffer()
	b = appendStatusLine(b, w.status, w.ex.token) // with the exchange token (§4.6)
	b = w.appendKeys(b, h, keys, false)
	if sniff {
		b = append(b, "Content-Type: "...)
		b = append(b, http.DetectContentType(c.pend)...)
		b = append(b, "\r\n"...)
	}
	if w.clen >= 0 {
		b = append(b, "Content-Length: "...)
		b = strconv.AppendInt(b, w.clen, 10)
		b = append(b, "\r\n"...)
	}
	if w.chunked {
		b = append(b, "Transfer-Encoding: chunked\r\n"...)
	}
	b = append(b, "\r\n"...)
	w.writeRaw(b)
	if len(c.pend) > 0 && !w.bodyless {
		if w.chunked {
			w.writeChunk(c.pend)
		} else {
			w.writeRaw(c.pend)
		}
	}
	c.pend = c.pend[:0]
}

// appendFields appends h's field lines sorted by name, each value on its own line
// (PROTOCOL.md §4.2/§4.4: repeated fields keep every value in order). As net/http,
// invalid names are dropped and CR or LF in a value becomes a space, so a handler
// cannot split the response. The framing fields are the library's to write.
func (w *response) appendFields(b []byte, h http.Header, trailers bool) []byte {
	keys, _ := w.fieldKeys(h, trailers)
	return w.appendKeys(b, h, keys, trailers)
}

// fieldKeys returns, sorted, the keys of h that appendKeys writes: the head's fields,
// or with trailers the http.TrailerPrefix ones. It also reports whether h has a key
// with that prefix. The slice is c.keys, valid until appendKeys.
func (w *response) fieldKeys(h http.Header, trailers bool) (keys []string, prefixed bool) {
	keys = w.c.keys[:0]
	for k := range h {
		isPrefixed := strings.HasPrefix(k, http.TrailerPrefix)
		prefixed = prefixed || isPrefixed
		if trailers {
			if isPrefixed {
				keys = append(keys, k)
			}
			continue
		}
		switch k {
		case "Content-Length", "Transfer-Encoding":
			continue
		}
		// Trailers go after the body, even when the handler set them through a
		// map it kept from before WriteHeader.
		if !isPrefixed && !slices.Contains(w.trailers, k) {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return keys, prefixed
}

// appendKeys appends the field lines of h's keys, as fieldKeys returned them.
func (w *response) appendKeys(b []byte, h http.Header, keys []string, trailers bool) []byte {
	for _, k := range keys {
		name := k
		if trailers {
			name = k[len(http.TrailerPrefix):]
		}
		b = appendField(b, name, h[k])
	}
	clear(keys)
	w.c.keys = keys[:0]
	return b
}

// appendField appends one field line per value of a field the handler set. It drops
// a field named AfterBurn-Exchange, in any case: the library writes the token of the
// exchange itself (appendStatusLine), and a handler's copy would make the head carry
// a second or a wrong one, which the watchdog takes for a stray response (§4.6).
func appendField(b []byte, name string, values []string) []byte {
	if !isTokenString(name) || isExchangeName(name) {
		return b
	}
	for _, v := range values {
		b = append(b, name...)
		b = append(b, ": "...)
		start := len(b)
		b = append(b, textproto.TrimString(v)...)
		for i := start; i < len(b); i++ {
			if b[i] == '\r' || b[i] == '\n' {
				b[i] = ' '
			}
		}
		b = append(b, "\r\n"...)
	}
	return b
}

func isExchangeName(name string) bool {
	return len(name) == len("afterburn-exchange") && strings.EqualFold(name, "afterburn-exchange")
}

func hasPrefixTrailers(h http.Header) bool {
	for k := range h {
		if strings.HasPrefix(k, http.TrailerPrefix) {
			return true
		}
	}
	return false
}

func (w *response) writeChunkHead(n int) {
	var buf [20]byte
	b := strconv.AppendUint(buf[:0], uint64(n), 16)
	b = append(b, '\r', '\n')
	w.writeRaw(b)
}

func (w *response) writeChunk(p []byte) {
	w.writeChunkHead(len(p))
	w.writeRaw(p)
	if w.err == nil {
		_, w.err = w.c.bw.WriteString("\r\n")
	}
}

// finish ends the response after the handler returned normally.
func (w *response) finish() error {
	defer func() { w.done = true }()
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	if !w.committed {
		w.commit(true)
	}
	c := w.c
	switch {
	case w.chunked:
		if len(c.pend) > 0 {
			w.writeChunk(c.pend)
			c.pend = c.pend[:0]
		}
		b := c.bw.AvailableBuffer()
		b = append(b, "0\r\n"...)
		for _, k := range w.trailers {
			b = appendField(b, k, w.header[k])
		}
		b = w.appendFields(b, w.header, true)
		b = append(b, "\r\n"...)
		w.writeRaw(b)
	case !w.bodyless && w.clen >= 0 && w.written < w.clen:
		// A short body must not look complete (§8.3): send what there is and stop.
		w.flush()
		return fmt.Errorf("afterburn: handler wrote %d bytes of its declared Content-Length %d (request %s)",
			w.written, w.clen, w.ex.id)
	}
	return w.flush()
}

// FlushError sends the head and everything written so far to the response pipe; a
// chunked body's bytes go out as one chunk. http.NewResponseController calls it.
func (w *response) FlushError() error {
	if w.done {
		return errAfterHandler
	}
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	if !w.committed {
		w.commit(false)
	}
	if c := w.c; w.chunked && len(c.pend) > 0 {
		w.writeChunk(c.pend)
		c.pend = c.pend[:0]
	}
	return w.flush()
}

// Flush implements http.Flusher.
func (w *response) Flush() { w.FlushError() }

// EnableFullDuplex lets http.NewResponseController(w).EnableFullDuplex succeed: the
// request body stays readable while the response is written (PROTOCOL.md §6.2).
func (w *response) EnableFullDuplex() error { return nil }

func (w *response) flush() error {
	if w.err == nil {
		w.err = w.c.bw.Flush()
	}
	return w.err
}
