package exchange

import (
	"io"
	"net/http"

	"github.com/afterburn-dev/afterburn/go/internal/watchdog/buffer"
	"github.com/afterburn-dev/afterburn/go/internal/watchdog/wire"
)

// An exchange's side of response buffering (PROTOCOL.md §6.1, respbuffer.go).

// buffersBody reports whether the body of the response goes through a
// respBuffer. Spliced exchanges (hijack.go) keep their own way.
func (x *Exchange) buffersBody(head *wire.RespHead) bool {
	return x.env.Buffers.On && x.hj == nil && !buffer.BodyInReader(x.l.BR, head)
}

// bufferBody is forward's loop for a buffered body (PROTOCOL.md §6.1): it
// reads the body from the pipe to its end into a respBuffer that its client
// writer empties to the client, and sets the trailers in h, the response's
// header. Its result is forward's.
func (x *Exchange) bufferBody(body io.Reader, head *wire.RespHead, h http.Header) *wire.Failure {
	b := x.env.Buffers.NewBuffer(x, x.w.ID, x.id, x.deadline, x.aborting, head.Chunked)
	x.rb = b
	go b.Write()
	buf := x.l.RespBuffer()
	for {
		n, rerr := body.Read(buf)
		if n > 0 {
			if err := b.Put(buf[:n]); err != nil {
				b.End(true)
				return wire.Classify(err)
			}
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			b.End(true)
			return wire.Classify(rerr)
		}
	}
	// While the client writer writes the body: net/http reads the trailers
	// from h only once the handler returns.
	setTrailers(h, head)
	b.End(false)
	x.respDone = true
	return nil
}

// awaitBuffered waits for the client writer of x's buffer, if it has one,
// and cleans up after it. run defers it: a buffered response ends, or is
// aborted (§8.7), only once the client got what was read. It aborts the
// response itself when the buffer lost bytes (its temporary file failed).
func (x *Exchange) awaitBuffered() {
	if x.rb != nil && x.rb.Finish() {
		panic(http.ErrAbortHandler)
	}
}

// Write sends p to the client and counts it for the access log: the client
// writer of a buffered response writes through it (bufferClient).
func (x *Exchange) Write(p []byte) (int, error) {
	n, err := x.rw.Write(p)
	x.entry.Bytes += int64(n)
	return n, err
}
