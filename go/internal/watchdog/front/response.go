package front

import (
	"net/http"
	"strconv"
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
	fields   []wire.RespField // WriteWorkerHead's, reused
	scratch  any              // the handler's, kept across requests (Scratch)
	began    time.Time        // when the request's head was read (Began)
}

// ConnScratch is the front's ResponseWriter as a handler that keeps state
// per request can see it. Scratch is a slot that lives as long as the
// connection, whose requests are served one at a time: what the handler
// keeps there for one request it may reuse for the next, so long as nothing
// holds a pointer into it once the handler has returned (as with the
// request and the header map, which the front reuses too). Began is when
// the front read the request's head, the clock reading its deadlines start
// from, so that the handler need not read the clock again (issue 29).
type ConnScratch interface {
	Scratch() *any
	Began() time.Time
}

// Scratch is ConnScratch's slot.
func (w *response) Scratch() *any { return &w.scratch }

// Began is ConnScratch's start of the request.
func (w *response) Began() time.Time { return w.began }

func (w *response) reset(c *conn, req *http.Request, began time.Time) {
	h := w.header
	if h == nil {
		h = make(http.Header)
	}
	clear(h)
	*w = response{c: c, req: req, header: h, left: -1, held: w.held[:0], fields: w.fields[:0], scratch: w.scratch, began: began}
}

func (w *response) Header() http.Header { return w.header }

func (w *response) WriteHeader(code int) {
	if w.status != 0 || code < 100 || code > 999 {
		return
	}
	w.status = code
	w.c.watch.stop()
	h := w.header
	cl, framed := h["Content-Length"]
	noBody := !bodyAllowed(code)
	w.bodyless = Bodyless(w.req.Method, code)
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

// WorkerHeadWriter is the front's ResponseWriter as an exchange sees it:
// a worker's head is written from its fields, not through Header.
type WorkerHeadWriter interface {
	WriteWorkerHead(head *wire.RespHead, extra []wire.RespField) bool
}

// WriteWorkerHead writes the head of a worker's response whose body has a
// length (PROTOCOL.md §4.4): status, the fields head forwards and extra
// (the request id, Content-Length, Date when the worker sent none), as
// WriteHeader writes them from a Header holding the same fields, without
// the map, sorting or the checks WriteHeader's fields need (the worker's
// were checked when read). It writes nothing and returns false when a head
// went out already or Header holds fields: the caller then fills Header.
func (w *response) WriteWorkerHead(head *wire.RespHead, extra []wire.RespField) bool {
	if w.status != 0 || len(w.header) != 0 || head.Chunked {
		return false
	}
	fields := head.AppendForwarded(w.fields[:0])
	fields = append(fields, extra...)
	sortFields(fields)
	w.fields = fields
	w.status = head.Status
	w.c.watch.stop()
	w.bodyless = Bodyless(w.req.Method, head.Status)
	if !w.bodyless {
		w.left = head.Length
	}
	w.closeAfter = Head{Request: w.req, Status: w.status, Fields: fields, Length: -1,
		NoKeepAlives: w.c.srv.closing.Load()}.Write(w.c.bw)
	return true
}

// sortFields sorts fields by name, keeping the order of one name's values,
// as a header's keys are sorted when written: an insertion sort, for the
// handful a head has.
func sortFields(fields []wire.RespField) {
	for i := 1; i < len(fields); i++ {
		for j := i; j > 0 && fields[j].Name < fields[j-1].Name; j-- {
			fields[j], fields[j-1] = fields[j-1], fields[j]
		}
	}
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

// writeHead writes the head (head.go); length is the Content-Length of a
// body the front measured itself, -1 for none.
func (w *response) writeHead(length int) {
	w.closeAfter = Head{Request: w.req, Status: w.status, Header: w.header, Length: length,
		Chunked: w.chunked, NoKeepAlives: w.c.srv.closing.Load()}.Write(w.c.bw)
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
func (w *response) writeChunk(p []byte) (int, error) { return WriteChunk(w.c.bw, p) }

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

func (w *response) SetWriteDeadline(t time.Time) error {
	w.c.writeBy = t
	return w.c.gc.SetWriteDeadline(t)
}

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
		WriteLastChunk(bw, w.header)
	}
	if bw.Flush() != nil {
		return false
	}
	return !w.closeAfter && w.left <= 0
}
