package buffer

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"sync"
	"sync/atomic"

	"github.com/afterburn-dev/afterburn/go/internal/watchdog/config"
	"github.com/afterburn-dev/afterburn/go/internal/watchdog/obs"
	"github.com/afterburn-dev/afterburn/go/internal/watchdog/wire"
)

// Request buffering (PROTOCOL.md §6.6): a body announced by Content-Length
// is read whole from the client before a worker is taken, in memory up to
// request_buffer_memory and in an anonymous temporary file beyond it, so
// that a client that trickles its body or gives up half-way never holds a
// worker. Chunked bodies keep streaming (§6.2: full duplex).

// BufferedBody is one request body read whole from the client.
type BufferedBody struct {
	Mem     []byte   // the first bytes, or all of them
	file    *os.File // the rest, nil when mem holds everything
	fileN   int64
	budget  *SpillBudget
	m       *obs.Metrics
	pooled  bool // mem came from memPools
	counted bool // its bytes are in the gauge
}

// memPools recycle memory parts in three sizes up to the default
// request_buffer_memory, so that the common small body (an inline one,
// §6.1) takes 16 KiB and not the most a body may hold in memory.
var memPools = [...]struct {
	size int64
	pool sync.Pool
}{{size: InlineBodyMax}, {size: 64 << 10}, {size: config.DefaultRequestBufferMemory}}

// pooledMem is a slice of n bytes from the smallest pool that fits, or nil
// when n is larger than every pool's size.
func pooledMem(n int64) []byte {
	for i := range memPools {
		if p := &memPools[i]; n <= p.size {
			if b, ok := p.pool.Get().([]byte); ok {
				return b[:n]
			}
			return make([]byte, n, p.size)
		}
	}
	return nil
}

// putMem gives a pooled slice back to the pool of its size.
func putMem(b []byte) {
	for i := range memPools {
		if p := &memPools[i]; int64(cap(b)) == p.size {
			p.pool.Put(b[:0])
			return
		}
	}
}

// RequestBuffers reads request bodies whole before they take a worker
// (PROTOCOL.md §6.6), in memory or in temporary files under the spill budget.
type RequestBuffers struct {
	Cfg   *config.Config
	Spill *SpillBudget // buffer_spill_max, shared with response buffering
	M     *obs.Metrics
	Log   *obs.Logger
	// spillRefusedNow: request bodies could not spill to buffer_dir last
	// time, and stream instead; logged once while it lasts.
	spillRefusedNow atomic.Bool
}

// BufferBody reads the n-byte body of r. It returns the error type to answer
// when the body cannot be had: bad_request when the client stalled past
// read_timeout or went away (§6.4 cannot apply: no worker saw a byte),
// unavailable when a temporary file failed half-way. It returns neither body
// nor error when the part beyond request_buffer_memory cannot go to a file
// (buffer_spill_max reached, buffer_dir unusable): nothing was read yet, and
// the body streams to the worker as it would without buffering (§6.6).
func (rb *RequestBuffers) BufferBody(r *http.Request) (*BufferedBody, wire.ErrorType) {
	n := r.ContentLength
	memN := min(n, rb.Cfg.RequestBufferMemory)
	b := &BufferedBody{budget: rb.Spill, m: rb.M}
	if b.Mem = pooledMem(memN); b.Mem != nil {
		b.pooled = true
	} else {
		b.Mem = make([]byte, memN)
	}
	if rest := n - memN; rest > 0 {
		if !rb.Spill.reserve(rest) {
			b.Release()
			rb.spillRefused(fmt.Sprintf("%v (%d bytes)", errSpillFull, rb.Spill.Max))
			return nil, ""
		}
		b.fileN = rest
		f, err := spillFile(bufferDir(rb.Cfg))
		if err != nil {
			b.Release()
			rb.spillRefused(err.Error())
			return nil, ""
		}
		b.file = f
		if rb.spillRefusedNow.Swap(false) {
			rb.Log.Printf("request bodies spill to %s again", bufferDir(rb.Cfg))
		}
	}
	b.gauge(1)
	b.counted = true
	if _, err := io.ReadFull(r.Body, b.Mem); err != nil {
		b.Release()
		return nil, wire.ErrBadRequest
	}
	if b.file != nil {
		if _, err := io.CopyN(b.file, r.Body, b.fileN); err != nil {
			b.Release()
			if isClientError(err) {
				return nil, wire.ErrBadRequest
			}
			rb.Log.Errorf("cannot buffer a request body in %s: %v", bufferDir(rb.Cfg), err)
			return nil, wire.ErrUnavailable
		}
	}
	return b, ""
}

// spillRefused logs, once while it lasts, that bodies too large for memory
// stream instead of being buffered (§6.6).
func (rb *RequestBuffers) spillRefused(why string) {
	if !rb.spillRefusedNow.Swap(true) {
		rb.Log.Warnf("request bodies larger than request_buffer_memory stream to their worker unbuffered: %s", why)
	}
}

// isClientError tells a failed read from the client (the copy's source)
// from a failed write of the temporary file.
func isClientError(err error) bool {
	var pe *os.PathError
	return !errors.As(err, &pe)
}

// Reader reads the whole body from its start; each call starts anew, so a
// request that a worker never read can be sent to another (§9.3) whatever
// its size.
func (b *BufferedBody) Reader() io.Reader {
	if b.file == nil {
		return bytes.NewReader(b.Mem)
	}
	return io.MultiReader(bytes.NewReader(b.Mem), io.NewSectionReader(b.file, 0, b.fileN))
}

// Small reports a body held in memory that fits with its head in one write
// to the worker (§6.1).
func (b *BufferedBody) Small() bool { return b.file == nil && len(b.Mem) <= InlineBodyMax }

// gauge adds (sign 1) or removes (-1) the body's bytes from
// afterburn_request_buffer_bytes (§10.4).
func (b *BufferedBody) gauge(sign float64) {
	b.m.RequestBuffered.WithLabelValues("memory").Add(sign * float64(len(b.Mem)))
	b.m.RequestBuffered.WithLabelValues("file").Add(sign * float64(b.fileN))
}

// Release gives the memory, the file and the budget back.
func (b *BufferedBody) Release() {
	if b.Mem == nil {
		return // released already
	}
	if b.counted {
		b.gauge(-1)
	}
	if b.file != nil {
		b.file.Close()
		b.file = nil
	}
	if b.fileN > 0 {
		b.budget.Release(b.fileN)
	}
	if b.pooled {
		putMem(b.Mem)
	}
	b.Mem = nil
}

// InlineBodyMax is the largest body announced by Content-Length that is read
// whole before its head is written, so that head and body reach the worker
// in one write and wake it once (PROTOCOL.md §6.1). With a head it fits the
// worker's head buffer (reqBufSize).
const InlineBodyMax = 16 << 10
