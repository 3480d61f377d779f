package front

import (
	"bufio"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/afterburn-dev/afterburn/go/internal/watchdog/wire"
)

// response is the http.ResponseWriter of a request the front took
// (PROTOCOL.md §10.6). It writes what net/http's would, byte for byte where
// the exchange sets the framing (it always does): the status line, the
// fields sorted, the framing, Connection: close when the connection is to
// close; a body of unknown length chunked. It has the methods
// http.ResponseController looks for, except Hijack: a body large enough to
// be spliced never takes the front (conn.go).
type response struct {
	c      *conn
	req    *http.Request
	header http.Header
	status int // 0 until WriteHeader

	bodyless bool // HEAD, 1xx, 204, 304
	chunked  bool
	// closeAfter: the connection closes after this response (the client or
	// the handler asked for it, or the server is shutting down).
	closeAfter bool
	// left is the Content-Length still to write; -1 for no Content-Length.
	left int64
	// deferred: the head waits, the body of unknown length held in held
	// (commit).
	deferred bool
	held     []byte
}

func (w *response) reset(c *conn, req *http.Request) {
	h := w.header
	if h == nil {
		h = make(http.Header)
	}
	clear(h)
	*w = response{c: c, req: req, header: h, left: -1, held: w.held[:0]}
}

func (w *response) Header() http.Header { return w.header }

// ownFields are written by writeHead itself, never from the header: the
// framing, and Connection when the response is to close and the header does
// not say so already (net/http drops the header's then, ownTE otherwise).
var (
	ownFields = map[string]bool{"Connection": true, "Transfer-Encoding": true}
	ownTE     = map[string]bool{"Transfer-Encoding": true}
)

// writeFields writes h as net/http's Header.WriteSubset(bw, ownFields)
// does, sorted, one line per value, without its per-value replacer and
// trimming when no name or value needs them (the exchange's fields come
// checked from the worker's head, §4.4), and through WriteSubset itself
// when one does.
func writeFields(bw *bufio.Writer, h http.Header, ownClose bool) {
	var arr [24]string
	keys := arr[:0]
	for k, vv := range h {
		if len(vv) == 0 || k == "Transfer-Encoding" || k == "Connection" && ownClose {
			continue
		}
		if !plainField(k, vv) {
			own := ownFields
			if !ownClose {
				own = ownTE
			}
			h.WriteSubset(bw, own)
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

func (w *response) WriteHeader(code int) {
	if w.status != 0 || code < 100 || code > 999 {
		return
	}
	w.status = code
	w.c.watch.stop()
	h := w.header
	cl, framed := h["Content-Length"]
	noBody := code < 200 || code == http.StatusNoContent || code == http.StatusNotModified
	w.bodyless = noBody || w.req.Method == http.MethodHead
	_, te := h["Transfer-Encoding"]
	_, trailers := h["Trailer"]
	if !framed && !noBody && !te && !trailers {
		// net/http holds the head of a body of unknown length until the
		// body passes smallBody or is flushed (then chunked) or the
		// handler returns (then framed by its length, a HEAD's too): so
		// does this. The exchange always frames its responses; /_/ready
		// and the like do not.
		w.deferred = true
		return
	}
	w.chunked = !w.bodyless && !framed
	if framed && len(cl) == 1 && !w.bodyless {
		if n, err := strconv.ParseInt(cl[0], 10, 64); err == nil {
			w.left = n
		}
	}
	w.writeHead(-1)
}

// smallBody is net/http's bufferBeforeChunkingSize: the most of a body of
// unknown length held before its head goes out chunked.
const smallBody = 2048

// commit writes a deferred head, then the bytes held: chunked when the body
// is not all here (more, a HEAD's without any framing), else with the
// Content-Length of what was held (a HEAD's only when the handler wrote
// some).
func (w *response) commit(more bool) error {
	w.deferred = false
	held := w.held
	w.held = w.held[:0]
	switch {
	case w.bodyless: // HEAD
		n := -1
		if !more && len(held) > 0 {
			n = len(held)
		}
		w.writeHead(n)
		return nil
	case more:
		w.chunked = true
		w.writeHead(-1)
		_, err := w.writeChunk(held)
		return err
	}
	w.writeHead(len(held))
	_, err := w.c.bw.Write(held)
	return err
}

// writeHead writes the status line and the fields as net/http does: the
// header sorted, then the fields it adds itself in its order (Date,
// Content-Length of a body it framed, Connection: close, Transfer-Encoding);
// length is that Content-Length, -1 for none. A Connection field that
// already says close is kept where it sorts, as net/http keeps it.
func (w *response) writeHead(length int) {
	code, h, bw := w.status, w.header, w.c.bw
	saysClose := spacedToken(h.Get("Connection"), "close")
	w.closeAfter = w.closeAfter || wantsClose(w.req) || w.c.srv.closing.Load() || saysClose
	ownClose := w.closeAfter && !saysClose
	b := append(bw.AvailableBuffer(), "HTTP/1.1 "...)
	b = strconv.AppendInt(b, int64(code), 10)
	b = append(b, ' ')
	if text := http.StatusText(code); text != "" {
		b = append(b, text...)
	} else {
		b = append(b, "status code "...)
		b = strconv.AppendInt(b, int64(code), 10)
	}
	bw.Write(append(b, "\r\n"...))
	writeFields(bw, h, ownClose)
	b = bw.AvailableBuffer()
	if _, ok := h["Date"]; !ok {
		b = append(b, "Date: "...)
		b = time.Now().UTC().AppendFormat(b, http.TimeFormat)
		b = append(b, "\r\n"...)
	}
	if length >= 0 {
		b = append(b, "Content-Length: "...)
		b = strconv.AppendInt(b, int64(length), 10)
		b = append(b, "\r\n"...)
	}
	if ownClose {
		b = append(b, "Connection: close\r\n"...)
	}
	if w.chunked {
		b = append(b, "Transfer-Encoding: chunked\r\n"...)
	}
	bw.Write(append(b, "\r\n"...))
}

// Write writes body bytes, as one chunk when the body is chunked. Like
// net/http it drops a body that must not be sent (the error body of §8.1
// answering a HEAD), and refuses bytes past a Content-Length.
func (w *response) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.WriteHeader(http.StatusOK)
	}
	switch {
	case w.deferred:
		if len(w.held)+len(p) <= smallBody {
			w.held = append(w.held, p...) // a HEAD's too: its length counts
			return len(p), nil
		}
		if err := w.commit(true); err != nil {
			return 0, err
		}
		if w.bodyless {
			return len(p), nil
		}
		return w.writeChunk(p)
	case w.bodyless:
		return len(p), nil
	case w.left >= 0:
		if int64(len(p)) > w.left {
			return 0, http.ErrContentLength
		}
		n, err := w.c.bw.Write(p)
		w.left -= int64(n)
		return n, err
	case !w.chunked:
		return w.c.bw.Write(p)
	}
	return w.writeChunk(p)
}

// writeChunk writes p as one chunk.
func (w *response) writeChunk(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil // a chunk of size 0 would end the body
	}
	bw := w.c.bw
	bw.WriteString(strconv.FormatInt(int64(len(p)), 16))
	bw.WriteString("\r\n")
	bw.Write(p)
	_, err := bw.WriteString("\r\n") // bufio.Writer keeps the first error
	return len(p), err
}

func (w *response) FlushError() error {
	if w.status == 0 {
		w.WriteHeader(http.StatusOK)
	}
	if w.deferred {
		if err := w.commit(true); err != nil {
			return err
		}
	}
	return w.c.bw.Flush()
}

func (w *response) Flush() { w.FlushError() }

func (w *response) SetReadDeadline(t time.Time) error {
	w.c.watch.stop()
	return w.c.gc.SetReadDeadline(t)
}

func (w *response) SetWriteDeadline(t time.Time) error { return w.c.gc.SetWriteDeadline(t) }

// EnableFullDuplex has nothing to do: the connection's one goroutine runs
// the handler, which may read the body and write the response at once.
func (w *response) EnableFullDuplex() error { return nil }

// finish ends a response the handler returned from: the head if none went
// out, the last chunk with the trailers the exchange set (§6.7), flushed.
// It reports whether the connection may carry another request.
func (w *response) finish() bool {
	if w.status == 0 {
		w.WriteHeader(http.StatusOK)
	}
	if w.deferred {
		w.commit(false) // all of the body is here: framed by its length
	}
	bw := w.c.bw
	if w.chunked {
		bw.WriteString("0\r\n")
		writeTrailers(bw, w.header)
		bw.WriteString("\r\n")
	}
	if bw.Flush() != nil {
		return false
	}
	return !w.closeAfter && w.left <= 0
}

// writeTrailers writes the fields the handler set under
// http.TrailerPrefix, as net/http sends them after the last chunk.
func writeTrailers(bw *bufio.Writer, h http.Header) {
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
}

// wantsClose is net/http's Request.wantsClose, which decides whether the
// response closes the connection: r.Close (a close token among the
// Connection fields' comma-separated lists), or close in the first
// Connection field bounded by spaces, tabs or commas (spacedToken), which
// is laxer: "Connection: x close" closes the connection but does not set
// r.Close.
func wantsClose(r *http.Request) bool {
	return r.Close || spacedToken(r.Header.Get("Connection"), "close")
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
