package exchange

// The request side of an exchange (PROTOCOL.md §4.2, §5, §6.1–§6.4): the
// head as the watchdog writes it, and the body streamed, inline or replayed.
// exchange.go runs the exchange and reads the response.

import (
	"io"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/afterburn-dev/afterburn/go/internal/watchdog/wire"
	"github.com/afterburn-dev/afterburn/go/internal/watchdog/worker"
)

// writeHead writes the request line and fields of PROTOCOL.md §4.2 and §5,
// flushed in one write. The head is appended in place into bw's free space
// (bufio.Writer.AvailableBuffer): one Write, not one call per piece.
func (x *Exchange) writeHead() error {
	r, bw := x.r, x.l.BW
	b := bw.AvailableBuffer()
	b = append(b, r.Method...)
	b = append(b, ' ')
	b = append(b, x.target...)
	b = append(b, " HTTP/1.1\r\nHost: "...)
	b = append(b, requestHost(r)...)
	b = append(b, "\r\n"...)

	conn := wire.ConnectionFields(r.Header)
	var keyArr [32]string
	keys := keyArr[:0]
	for k := range r.Header {
		if !wire.DropRequestField(k, conn) {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys) // deterministic order; each value its own line (§4.2)
	for _, k := range keys {
		for _, v := range r.Header[k] {
			b = append(b, k...)
			b = append(b, ": "...)
			b = append(b, v...)
			b = append(b, "\r\n"...)
		}
	}
	if r.Trailer != nil && r.Header["Trailer"] == nil {
		// §6.7: the client's Trailer field, which net/http took out of
		// r.Header (its names are r.Trailer's keys).
		b = wire.AppendTrailerField(b, r.Trailer, conn)
	}
	b = append(b, "AfterBurn-Request-Id: "...)
	b = append(b, x.id...)
	b = append(b, "\r\n"...)
	if x.w.Tokens {
		x.token = wire.NextToken() // PROTOCOL.md §4.6
		b = append(b, "AfterBurn-Exchange: "...)
		b = append(b, x.token.Bytes()...)
		b = append(b, "\r\n"...)
	}
	var now time.Time
	if !x.deadline.IsZero() {
		// PROTOCOL.md §5.2: whole milliseconds left now, rounded down.
		now = time.Now()
		ms := max(x.deadline.Sub(now).Milliseconds(), 0)
		b = append(b, "AfterBurn-Timeout-Ms: "...)
		b = strconv.AppendInt(b, ms, 10)
		b = append(b, "\r\n"...)
	}
	if r.ContentLength >= 0 {
		b = append(b, "Content-Length: "...)
		b = strconv.AppendInt(b, r.ContentLength, 10)
		b = append(b, "\r\n\r\n"...)
	} else {
		b = append(b, "Transfer-Encoding: chunked\r\n\r\n"...)
	}
	// A head larger than bw's free space is written by this Write in part,
	// and undercounted below, which only makes the §9.3 retry more cautious.
	bw.Write(b)
	x.headLen = bw.Buffered()
	if x.inline != nil {
		bw.Write(x.inline) // §6.1: with its head, in one write when both fit bw
		x.bodyWritten = int64(len(x.inline))
	} else if r.ContentLength != 0 {
		return bw.Flush() // the body follows (sendBody, spliceBody)
	}
	if now.IsZero() {
		now = time.Now()
	}
	// The whole request: forward reads its response next, which Send
	// awaits without a read that finds the pipe empty.
	return x.l.Send(now)
}

// readInline reads the whole body of x.r, at most inlineBodyMax bytes, into
// the worker's body buffer, before anything is written to the worker. The
// client's read is held to the request's deadline (§5.2) as well as to
// read_timeout. It returns the error to answer when the client does not
// deliver the body: timeout past the deadline, bad_request otherwise (§6.4).
func (x *Exchange) readInline() wire.ErrorType {
	buf := x.l.BodyBuffer()[worker.ChunkRoom : worker.ChunkRoom+int(x.r.ContentLength)]
	// net/http holds the whole request to read_timeout from its start; the
	// deadline may come sooner. Restored after, for the background read
	// net/http does while the handler runs.
	var readBy time.Time
	if rt := x.env.Cfg.ReadTimeout; rt > 0 {
		readBy = x.entry.Start.Add(rt)
	}
	tightened := !x.deadline.IsZero() && (readBy.IsZero() || x.deadline.Before(readBy))
	if tightened {
		x.controller().SetReadDeadline(x.deadline)
	}
	_, err := io.ReadFull(x.body, buf)
	if err != nil {
		if tightened && !time.Now().Before(x.deadline) {
			return wire.ErrTimeout
		}
		return wire.ErrBadRequest
	}
	if tightened {
		x.controller().SetReadDeadline(readBy)
	}
	x.keepForReplay(buf) // §9.3
	x.inline = buf
	return ""
}

// requestHost is the Host field of PROTOCOL.md §4.2: the client's, or for
// an HTTP/1.0 client that sent none the address it connected to.
func requestHost(r *http.Request) string {
	if r.Host != "" {
		return r.Host
	}
	if a, ok := r.Context().Value(http.LocalAddrContextKey).(interface{ String() string }); ok {
		return a.String()
	}
	return "localhost"
}

// sendBody streams the client's body to the request pipe as it arrives
// (PROTOCOL.md §6.1), re-chunked when its length is unknown, with the
// client's trailers (§4.2, §6.7). Each piece read from the client is one write.
// On a failure it cannot end honestly (§6.4) it kills the worker.
func (x *Exchange) sendBody() bodyFailure {
	l := x.l
	buf := l.BodyBuffer()
	chunked := x.r.ContentLength < 0
	limit := x.env.Cfg.MaxRequestBody
	var total int64
	for {
		n, rerr := x.body.Read(buf[worker.ChunkRoom : worker.ChunkRoom+worker.BodyBufSize])
		if n > 0 {
			total += int64(n)
			x.keepForReplay(buf[worker.ChunkRoom : worker.ChunkRoom+n])
			if chunked && limit > 0 && total > limit {
				return x.abortBody(bodyTooLarge) // §7.2, enforced as bytes arrive
			}
			out := buf[worker.ChunkRoom : worker.ChunkRoom+n]
			if chunked {
				size := strconv.AppendUint(x.scratch[:0], uint64(n), 16)
				size = append(size, '\r', '\n')
				start := worker.ChunkRoom - len(size)
				copy(buf[start:], size)
				buf[worker.ChunkRoom+n], buf[worker.ChunkRoom+n+1] = '\r', '\n'
				out = buf[start : worker.ChunkRoom+n+2]
			}
			nw, err := l.Req.Write(out)
			x.bodyWritten += int64(nw)
			if err != nil {
				return bodyWorker
			}
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			return x.abortBody(bodyClient)
		}
	}
	if !chunked {
		return BodyOK
	}
	bw := l.BW
	bw.WriteString("0\r\n")
	conn := wire.ConnectionFields(x.r.Header) // §5.4: fields named in Connection, trailers too
	for k, vv := range x.r.Trailer {
		if conn[k] || !wire.TrailerAllowed(k) { // §6.7
			continue
		}
		for _, v := range vv {
			bw.WriteString(k)
			bw.WriteString(": ")
			bw.WriteString(v)
			bw.WriteString("\r\n")
		}
	}
	bw.WriteString("\r\n")
	x.bodyWritten += int64(bw.Buffered())
	if bw.Flush() != nil {
		return bodyWorker
	}
	return BodyOK
}

// abortBody stops the exchange because the body cannot be completed (§6.4).
// That wakes up forward, which then reports the failure.
func (x *Exchange) abortBody(f bodyFailure) bodyFailure {
	close(x.aborting)
	x.stopWorker()
	return f
}

// stopWorker unblocks whatever of x waits on its worker's pipes: it kills
// the worker, or, when the worker serves several lanes, wakes this lane
// only, the fault being confined to it (§2.5).
func (x *Exchange) stopWorker() {
	if x.w.InUse > 1 {
		x.l.Wake()
	} else {
		x.w.Kill()
	}
}

// ReplayMax is the most body bytes kept for a second attempt (§9.3): a copy
// made for every request with a body, so it stays small; a larger body is
// not replayed.
const ReplayMax = 64 << 10

// keepForReplay copies body bytes about to be sent, while they may still be
// retried on another worker (PROTOCOL.md §9.3). A buffered body (§6.6) needs
// no copy: it can be read again from its start.
func (x *Exchange) keepForReplay(p []byte) {
	switch {
	case x.replayLost, x.buffered != nil:
	case len(x.replay)+len(p) > ReplayMax:
		x.replay, x.replayLost = nil, true
	default:
		if x.replay == nil && x.r.ContentLength > 0 {
			x.replay = make([]byte, 0, min(x.r.ContentLength, ReplayMax))
		}
		x.replay = append(x.replay, p...)
	}
}
