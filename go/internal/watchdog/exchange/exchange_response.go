package exchange

// The response side of an exchange (PROTOCOL.md §4.4, §6.1, §6.5): the
// worker's head checked and copied to the client, its body forwarded as it
// arrives or through a buffer (respbuffer.go). exchange.go runs the exchange;
// resphead.go reads the head.

import (
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/afterburn-dev/afterburn/go/internal/watchdog/front"
	"github.com/afterburn-dev/afterburn/go/internal/watchdog/wire"
)

// forward reads the worker's response and copies it to the client as it
// arrives (PROTOCOL.md §4.4, §6.1), or, when its body is not all read yet,
// through a buffer (respbuffer.go). It returns nil when the response was
// read to its end, even if the client went away meanwhile (§6.5).
func (x *Exchange) forward() *wire.Failure {
	l := x.l
	head := &l.Head
	if err := head.Read(l.BR); err != nil {
		x.respBegun = len(head.Raw) > 0
		return wire.Classify(err)
	}
	x.respBegun = true
	if x.token.Set() && !x.token.Echoes(head.Tokens, head.Token) {
		return wire.FailExchange // §4.6: not one byte of it reaches the client
	}
	hasBody := head.HasBody(x.r.Method)
	switch {
	case head.Status < 200:
		return wire.FailBad // §4.4: 1xx is the watchdog's job
	case hasBody && !head.Chunked && head.Length < 0:
		return wire.FailBad // §4.4: close-delimited
	}
	x.closeAfter = head.Close

	h := x.rw.Header()
	// §4.4: AfterBurn-Error is how a library's error (§8.1) reaches the
	// client; every other reserved field stays behind.
	id := wire.RespField{Name: "AfterBurn-Request-Id", Value: x.id}
	if !x.writeWorkerHead(head, hasBody, id) {
		x.fillHeader(h, head, hasBody, id)
		x.rw.WriteHeader(head.Status)
	}
	clientOK := true
	x.headSent = true
	x.entry.Status = head.Status
	if !hasBody {
		x.respDone = true
		return nil
	}
	if x.hj != nil && !head.Chunked {
		return x.spliceResponse(head.Length)
	}
	body := &l.Body
	body.Begin(l.BR, head)
	if x.buffersBody(head) {
		// PROTOCOL.md §6.1: read at the worker's pace, written at the
		// client's (respbuffer.go).
		return x.bufferBody(body, head, h)
	}
	if head.Chunked && l.BR.Buffered() == 0 {
		// A stream: the client gets the head before the first chunk, which
		// may be a while (§6.1).
		if x.Flush() != nil {
			clientOK = false
		}
	}

	buf := l.RespBuffer()
	for {
		n, rerr := body.Read(buf)
		if n > 0 && clientOK {
			if _, err := x.rw.Write(buf[:n]); err != nil {
				clientOK = false // §6.5: read on to the end, discarding
			} else {
				x.entry.Bytes += int64(n)
				// §6.1: flush whenever the next read may wait for the
				// worker, so streams reach the client as produced.
				if rerr == nil && (head.Chunked || l.BR.Buffered() == 0) {
					if x.Flush() != nil {
						clientOK = false
					}
				}
			}
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			return wire.Classify(rerr)
		}
	}
	setTrailers(h, head)
	x.respDone = true
	return nil
}

// dateCache is a Date field value (RFC 9110 §6.6.1) and the second it
// stands for.
type dateCache struct {
	sec int64
	v   []string
}

var lastDate atomic.Pointer[dateCache]

// DateField is the Date field for a response made at now. net/http would
// add the same, formatting it anew for every response with
// time.AppendFormat (~1,900 instructions); this formats it once a second.
// The slice is shared, so it is capped: an append never writes into it.
func DateField(now time.Time) []string {
	sec := now.Unix()
	if d := lastDate.Load(); d != nil && d.sec == sec {
		return d.v
	}
	d := &dateCache{sec, []string{now.UTC().Format(http.TimeFormat)}}
	d.v = d.v[:1:1]
	lastDate.Store(d)
	return d.v
}

// setTrailers has net/http send the worker's trailers after the body, less
// the fields of §4.4, §5.4 and §6.7. The head is out: net/http took its copy
// at WriteHeader. A name the Trailer field declared is dropped from h first,
// since net/http would send h's value of it again as a trailer: a field the
// worker sent in its head is not one of its trailers (§6.7).
func setTrailers(h http.Header, head *wire.RespHead) {
	for _, v := range h["Trailer"] {
		for name := range strings.SplitSeq(v, ",") {
			delete(h, http.CanonicalHeaderKey(strings.TrimSpace(name)))
		}
	}
	for _, f := range head.Trailers {
		if !wire.TrailerAllowed(f.Name) || !head.Forwarded(f.Name) {
			continue
		}
		k := http.TrailerPrefix + f.Name
		h[k] = append(h[k], f.Value)
	}
}

// writeWorkerHead has the front write the head of a response framed by its
// length straight from the worker's fields (front.WorkerHeadWriter), with
// what fillHeader would add: the request id, Content-Length, Date. It
// returns false when x.rw is not the front's or will not.
func (x *Exchange) writeWorkerHead(head *wire.RespHead, hasBody bool, id wire.RespField) bool {
	fw, ok := x.rw.(front.WorkerHeadWriter)
	if !ok || head.Chunked || !hasBody && head.Length < 0 {
		return false
	}
	extra := append(x.extra[:0], id, wire.RespField{Name: "Content-Length", Value: head.LengthValue()})
	if !head.Has("Date") {
		extra = append(extra, wire.RespField{Name: "Date", Value: DateField(time.Now())[0]})
	}
	return fw.WriteWorkerHead(head, extra)
}

// fillHeader copies the worker's head into h for the ResponseWriter's
// WriteHeader: the forwarded fields, the request id, the framing, and a
// Date when the worker sent none; no Content-Type is sniffed.
func (x *Exchange) fillHeader(h http.Header, head *wire.RespHead, hasBody bool, id wire.RespField) {
	switch {
	case hasBody && head.Chunked:
		// Keep the worker's framing: chunked, so trailers can follow and
		// net/http does not compute a Content-Length for a short stream.
		head.CopyFields(h, id, wire.RespField{Name: "Transfer-Encoding", Value: "chunked"})
		if !x.r.ProtoAtLeast(1, 1) {
			delete(h, "Trailer") // §6.7: an HTTP/1.0 client gets no chunks, so no trailers
		}
	case hasBody || head.Length >= 0:
		// The body's length, or for HEAD, 204 and 304 the length the body
		// would have had.
		head.CopyFields(h, id, wire.RespField{Name: "Content-Length", Value: head.LengthValue()})
	default:
		head.CopyFields(h, id)
	}
	if _, ok := h["Content-Type"]; !ok {
		h["Content-Type"] = nil // no sniffing: only what the worker sent
	}
	if _, ok := h["Date"]; !ok {
		h["Date"] = DateField(time.Now())
	}
}
