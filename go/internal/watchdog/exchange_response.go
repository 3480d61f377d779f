package watchdog

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
)

// forward reads the worker's response and copies it to the client as it
// arrives (PROTOCOL.md §4.4, §6.1), or, when its body is not all read yet,
// through a buffer (respbuffer.go). It returns nil when the response was
// read to its end, even if the client went away meanwhile (§6.5).
func (x *exchange) forward() *failure {
	l := x.l
	head := &l.head
	if err := head.read(l.br); err != nil {
		x.respBegun = len(head.raw) > 0
		return classify(err)
	}
	x.respBegun = true
	if x.token.set() && !x.token.echoes(head.tokens, head.token) {
		return failExchange // §4.6: not one byte of it reaches the client
	}
	hasBody := head.hasBody(x.r.Method)
	switch {
	case head.status < 200:
		return failBad // §4.4: 1xx is the watchdog's job
	case hasBody && !head.chunked && head.length < 0:
		return failBad // §4.4: close-delimited
	}
	x.closeAfter = head.close

	h := x.rw.Header()
	// §4.4: AfterBurn-Error is how a library's error (§8.1) reaches the
	// client; every other reserved field stays behind.
	id := respField{"AfterBurn-Request-Id", x.id}
	switch {
	case hasBody && head.chunked:
		// Keep the worker's framing: chunked, so trailers can follow and
		// net/http does not compute a Content-Length for a short stream.
		head.copyFields(h, id, respField{"Transfer-Encoding", "chunked"})
		if !x.r.ProtoAtLeast(1, 1) {
			delete(h, "Trailer") // §6.7: an HTTP/1.0 client gets no chunks, so no trailers
		}
	case hasBody || head.length >= 0:
		// The body's length, or for HEAD, 204 and 304 the length the body
		// would have had.
		head.copyFields(h, id, respField{"Content-Length", head.lengthValue()})
	default:
		head.copyFields(h, id)
	}
	if _, ok := h["Content-Type"]; !ok {
		h["Content-Type"] = nil // no sniffing: only what the worker sent
	}
	if _, ok := h["Date"]; !ok {
		h["Date"] = dateField(time.Now())
	}
	clientOK := true
	x.rw.WriteHeader(head.status)
	x.headSent = true
	x.entry.status = head.status
	if !hasBody {
		x.respDone = true
		return nil
	}
	if x.hj != nil && !head.chunked {
		return x.spliceResponse(head.length)
	}
	body := &l.body
	body.begin(l.br, head)
	if x.buffersBody(head) {
		// PROTOCOL.md §6.1: read at the worker's pace, written at the
		// client's (respbuffer.go).
		return x.bufferBody(body, head, h)
	}
	if head.chunked && l.br.Buffered() == 0 {
		// A stream: the client gets the head before the first chunk, which
		// may be a while (§6.1).
		if x.flush() != nil {
			clientOK = false
		}
	}

	buf := l.respBuffer()
	for {
		n, rerr := body.Read(buf)
		if n > 0 && clientOK {
			if _, err := x.rw.Write(buf[:n]); err != nil {
				clientOK = false // §6.5: read on to the end, discarding
			} else {
				x.entry.bytes += int64(n)
				// §6.1: flush whenever the next read may wait for the
				// worker, so streams reach the client as produced.
				if rerr == nil && (head.chunked || l.br.Buffered() == 0) {
					if x.flush() != nil {
						clientOK = false
					}
				}
			}
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			return classify(rerr)
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

// dateField is the Date field for a response made at now. net/http would
// add the same, formatting it anew for every response with
// time.AppendFormat (~1,900 instructions); this formats it once a second.
// The slice is shared, so it is capped: an append never writes into it.
func dateField(now time.Time) []string {
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
func setTrailers(h http.Header, head *respHead) {
	for _, v := range h["Trailer"] {
		for name := range strings.SplitSeq(v, ",") {
			delete(h, http.CanonicalHeaderKey(strings.TrimSpace(name)))
		}
	}
	for _, f := range head.trailers {
		if !trailerAllowed(f.name) || !head.forwarded(f.name) {
			continue
		}
		k := http.TrailerPrefix + f.name
		h[k] = append(h[k], f.value)
	}
}
