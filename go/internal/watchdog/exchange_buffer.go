package watchdog

import (
	"io"
	"net/http"
)

// An exchange's side of response buffering (PROTOCOL.md §6.1, respbuffer.go).

// buffersBody reports whether the body of the response goes through a
// respBuffer. Spliced exchanges (hijack.go) keep their own way.
func (x *exchange) buffersBody(head *respHead) bool {
	return x.env.buffers.on && x.hj == nil && !bodyInReader(x.l.br, head)
}

// bufferBody is forward's loop for a buffered body (PROTOCOL.md §6.1): it
// reads the body from the pipe to its end into a respBuffer that its client
// writer empties to the client, and sets the trailers in h, the response's
// header. Its result is forward's.
func (x *exchange) bufferBody(body io.Reader, head *respHead, h http.Header) *failure {
	b := &respBuffer{
		client: x, worker: x.w.id, id: x.id, deadline: x.deadline, aborting: x.aborting,
		bs: x.env.buffers, chunked: head.chunked,
		more: make(chan struct{}, 1), room: make(chan struct{}, 1), done: make(chan struct{}),
	}
	x.rb = b
	go b.write()
	buf := x.l.respBuffer()
	for {
		n, rerr := body.Read(buf)
		if n > 0 {
			if err := b.put(buf[:n]); err != nil {
				b.end(true)
				return classify(err)
			}
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			b.end(true)
			return classify(rerr)
		}
	}
	// While the client writer writes the body: net/http reads the trailers
	// from h only once the handler returns.
	setTrailers(h, head)
	b.end(false)
	x.respDone = true
	return nil
}

// awaitBuffered waits for the client writer of x's buffer, if it has one,
// and cleans up after it. run defers it: a buffered response ends, or is
// aborted (§8.7), only once the client got what was read. It aborts the
// response itself when the buffer lost bytes (its temporary file failed).
func (x *exchange) awaitBuffered() {
	if x.rb != nil && x.rb.finish() {
		panic(http.ErrAbortHandler)
	}
}

// Write sends p to the client and counts it for the access log: the client
// writer of a buffered response writes through it (bufferClient).
func (x *exchange) Write(p []byte) (int, error) {
	n, err := x.rw.Write(p)
	x.entry.bytes += int64(n)
	return n, err
}
