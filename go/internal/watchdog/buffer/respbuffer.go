package buffer

// Response buffering (PROTOCOL.md §6.1), setting response_buffering.
//
// Without it, forward copies a response body from the worker's pipe to the
// client at the client's pace, so a client that reads slowly, or not at all,
// holds the worker until exec_timeout. With it, a body that is not already
// whole in the worker's reader takes another way:
//
//   - the exchange, on the handler's goroutine as before, reads the body from
//     the pipe as fast as the worker writes it and puts it in a respBuffer;
//   - a goroutine of the buffer's own, the client writer, takes it out in
//     order and writes it to the client at the client's pace.
//
// Once the body has been read to its end, forward returns and run gives the
// worker back to the pool as it always did (§6.3: once the request body was
// written too), while the client writer goes on. run returns, or panics for
// §8.7, only after the client writer is done (awaitBuffered), so that the
// handler ends with its response, as net/http requires.
//
// The buffer is a queue of segments: blocks of memory, up to
// response_buffer_memory bytes per response, and extents of a temporary file
// in buffer_dir, unlinked as soon as it is created, up to buffer_spill_max
// bytes for all responses together. When both are full the exchange stops
// reading the pipe until the client writer makes room: the worker waits on
// its pipe, as without buffering, never past the deadline (§5.2). A response
// is never failed for want of room.
//
// A client that keeps up sees no difference: the client writer writes each
// piece as soon as it is queued and flushes whenever the queue runs empty, so
// the chunks of a stream reach the client as they are produced. A client that
// goes away (§6.5) ends the client writer, and the exchange reads on,
// discarding, to the end of the response. A worker that fails mid-body ends
// the queue early: the client gets the bytes read before the failure, then
// run aborts its response (§8.7).

import (
	"bufio"
	"bytes"
	"os"
	"sync"
	"sync/atomic"

	"github.com/afterburn-dev/afterburn/go/internal/watchdog/config"
	"github.com/afterburn-dev/afterburn/go/internal/watchdog/obs"
	"github.com/afterburn-dev/afterburn/go/internal/watchdog/wire"
)

// respBlockSize is the size of a memory block of a response buffer, and of
// the pieces in which a spilled extent is read back.
const respBlockSize = 64 << 10

var respBlocks = sync.Pool{New: func() any { b := make([]byte, respBlockSize); return &b }}

// RespBuffers is the watchdog's side of response buffering: the settings,
// and the bytes all responses hold, for buffer_spill_max and the gauge of
// PROTOCOL.md §10.4.
type RespBuffers struct {
	On     bool         // response_buffering
	memMax int64        // response_buffer_memory, per response
	budget *SpillBudget // buffer_spill_max and the bytes of it in use, shared with request buffering (§6.6)
	dir    string
	log    *obs.Logger

	memHeld  atomic.Int64 // bytes in memory blocks
	fileHeld atomic.Int64 // bytes responses hold in temporary files, for the gauge

	// The log says once, not for every response, that spilling fails or
	// that buffer_spill_max is reached, until a spill succeeds again.
	spillFailing atomic.Bool
	capReached   atomic.Bool
}

func NewRespBuffers(cfg *config.Config, budget *SpillBudget, log *obs.Logger) *RespBuffers {
	return &RespBuffers{
		On: cfg.ResponseBuffering, memMax: cfg.ResponseBufferMemory,
		budget: budget, dir: bufferDir(cfg), log: log,
	}
}

// bufferDir is buffer_dir, or the system's temporary directory (§10.2).
func bufferDir(cfg *config.Config) string {
	if cfg.BufferDir == "" {
		return os.TempDir()
	}
	return cfg.BufferDir
}

// Release gives k spilled bytes back to the gauge and the shared budget.
func (bs *RespBuffers) Release(k int64) {
	bs.fileHeld.Add(-k)
	bs.budget.Release(k)
}

// HeldBytes is the gauge afterburn_response_buffer_bytes (PROTOCOL.md §10.4).
func (bs *RespBuffers) HeldBytes(where string) int64 {
	if where == "file" {
		return bs.fileHeld.Load()
	}
	return bs.memHeld.Load()
}

// CheckDir tells at start when temporary files cannot be made in buffer_dir:
// responses then stay in memory, up to response_buffer_memory each.
func (bs *RespBuffers) CheckDir() {
	if !bs.On || bs.budget.Max == 0 {
		return
	}
	f, err := bs.tempFile()
	if err != nil {
		bs.spillFailing.Store(true)
		bs.log.Errorf("buffer_dir: %v: responses will be buffered in memory only", err)
		return
	}
	f.Close()
}

// tempFile is an empty temporary file in buffer_dir that nothing can leave
// behind (spillFile, shared with request buffering).
func (bs *RespBuffers) tempFile() (*os.File, error) { return spillFile(bs.dir) }

// reserve takes up to n bytes of buffer_spill_max and returns how many it took.
func (bs *RespBuffers) reserve(n int64) int64 {
	for {
		held := bs.budget.Used.Load()
		k := min(n, bs.budget.Max-held)
		if k <= 0 {
			return 0
		}
		if bs.budget.Used.CompareAndSwap(held, held+k) {
			bs.fileHeld.Add(k)
			if bs.capReached.Load() {
				bs.capReached.Store(false)
			}
			return k
		}
	}
}

// BodyInReader reports whether the whole body of a response whose head was
// just read is already in br. Then forward copies it to the client as it
// always did, with no goroutine and no copy: the common small response.
func BodyInReader(br *bufio.Reader, head *wire.RespHead) bool {
	n := br.Buffered()
	if !head.Chunked {
		return head.Length <= int64(n)
	}
	p, _ := br.Peek(n)
	return ChunkedEndIn(p)
}

// ChunkedEndIn reports whether p holds a chunked body to its end: the chunks,
// the last chunk and the empty line after the trailer section. It only
// follows the sizes; a body it misjudges is copied the other way, where the
// chunked reader checks it as ever.
func ChunkedEndIn(p []byte) bool {
	for {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			return false
		}
		var size uint64
		digits := 0
		for _, c := range p[:i] {
			d, ok := wire.HexDigit(c)
			if !ok {
				break
			}
			size = size<<4 | uint64(d)
			digits++
		}
		if digits == 0 || digits > 16 {
			return false
		}
		p = p[i+1:]
		if size == 0 {
			for {
				j := bytes.IndexByte(p, '\n')
				switch {
				case j < 0:
					return false
				case j == 0, j == 1 && p[0] == '\r':
					return true
				}
				p = p[j+1:]
			}
		}
		if size > uint64(len(p)) || uint64(len(p))-size < 2 {
			return false
		}
		p = p[size+2:]
	}
}
