package buffer

// The queue of one buffered response (PROTOCOL.md §6.1): put by the exchange
// as it reads the pipe, write by the client writer at the client's pace.
// respbuffer.go says how the two sides meet and when the worker goes back.

import (
	"os"
	"sync"
	"time"
)

// RespBuffer holds one response body between the pipe (put, by the
// exchange) and the client (write, its client writer).
type RespBuffer struct {
	client   Client
	worker   int    // the worker's slot, for log lines
	id       string // the request's id, for log lines
	deadline time.Time
	aborting <-chan struct{} // closed when the request body failed (§6.4); nil without one
	bs       *RespBuffers
	chunked  bool

	mu      sync.Mutex
	segs    []segment // queued, in order, from head
	head    int
	mem     int64    // bytes in memory, the segment being written included
	file    *os.File // nil until the first spill
	fileEnd int64    // bytes spilled since the file was last emptied: where the next go
	fileOut int64    // of those, bytes written to the client
	noSpill bool     // the temporary file failed: memory only
	capped  bool     // the last put found buffer_spill_max reached
	ended   bool     // the exchange put its last byte, or failed
	failed  bool     // ... failed: the queue ends before the body
	gone    bool     // the client writer stopped: the rest is discarded (§6.5)
	broken  bool     // bytes were lost (the temporary file failed)

	more  chan struct{} // put or end → the client writer
	room  chan struct{} // the client writer freed room, or stopped → put
	done  chan struct{} // closed when the client writer returns
	timer *time.Timer   // the deadline, while put waits for room
}

// Client is the client side of a buffered response, where its client writer
// sends it: the exchange, which counts the bytes for its access log.
type Client interface {
	Write(p []byte) (int, error)
	Flush() error
}

// NewBuffer is the buffer of one response body of the worker in slot worker,
// for request id, whose exchange's deadline is deadline (zero: none) and whose
// request body, if it has one, closes aborting when it fails (§6.4). Its
// client writer, Write, is the caller's to start.
func (bs *RespBuffers) NewBuffer(client Client, worker int, id string, deadline time.Time, aborting <-chan struct{}, chunked bool) *RespBuffer {
	return &RespBuffer{
		client: client, worker: worker, id: id, deadline: deadline, aborting: aborting,
		bs: bs, chunked: chunked,
		more: make(chan struct{}, 1), room: make(chan struct{}, 1), done: make(chan struct{}),
	}
}

// segment is a piece of a respBuffer: a memory block, or an extent of its
// temporary file.
type segment struct {
	blk    *[]byte // from respBlocks; nil for a file extent
	data   []byte  // the bytes in blk
	off, n int64   // the file extent
}

func notify(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// Put queues p, waiting while there is no room. It fails only when the
// deadline passes while it waits, or the request body failed (§6.4): both
// end the exchange.
func (b *RespBuffer) Put(p []byte) error {
	for len(p) > 0 {
		b.mu.Lock()
		if b.gone {
			b.mu.Unlock()
			return nil // §6.5: read on, discarding
		}
		n := b.toMemoryLocked(p, b.bs.memMax)
		if n < len(p) {
			n += b.toFileLocked(p[n:])
		}
		if n == 0 && b.mem == 0 && b.fileEnd == b.fileOut {
			// Nothing held, not even the piece being written: hand over
			// one block however small the limits, as without buffering.
			n = b.toMemoryLocked(p, respBlockSize)
		}
		capped := b.capped
		b.mu.Unlock()
		if n > 0 {
			notify(b.more)
			p = p[n:]
			continue
		}
		if capped && !b.bs.capReached.Swap(true) {
			b.bs.log.Printf("w%d waits for the client of request %s: its response fills response_buffer_memory and temporary files hold buffer_spill_max (%d bytes)",
				b.worker, b.id, b.bs.budget.Max)
		}
		if err := b.waitRoom(); err != nil {
			return err
		}
	}
	return nil
}

// toMemoryLocked copies what fits under limit of p into memory blocks,
// filling the last queued one first, and returns how much.
func (b *RespBuffer) toMemoryLocked(p []byte, limit int64) int {
	n := 0
	for n < len(p) && b.mem < limit {
		var s *segment
		if k := len(b.segs); k > b.head && b.segs[k-1].blk != nil && len(b.segs[k-1].data) < respBlockSize {
			s = &b.segs[k-1]
		} else {
			blk := respBlocks.Get().(*[]byte)
			b.segs = append(b.segs, segment{blk: blk, data: (*blk)[:0]})
			s = &b.segs[len(b.segs)-1]
		}
		room := min(int64(cap(s.data)-len(s.data)), limit-b.mem)
		c := copy(s.data[len(s.data):len(s.data)+int(room)], p[n:])
		s.data = s.data[:len(s.data)+c]
		n += c
		b.mem += int64(c)
		b.bs.memHeld.Add(int64(c))
	}
	return n
}

// toFileLocked writes what buffer_spill_max leaves room for of p to the
// temporary file, queues it, and returns how much. It writes with b.mu held:
// the client writer reads only extents queued before, never truncates while
// a write may be under way, and waits for the lock a few microseconds at most.
func (b *RespBuffer) toFileLocked(p []byte) int {
	b.capped = false
	if b.noSpill || b.bs.budget.Max == 0 {
		return 0
	}
	k := b.bs.reserve(int64(len(p)))
	if k == 0 {
		b.capped = true
		return 0
	}
	if b.file == nil {
		f, err := b.bs.tempFile()
		if err != nil {
			b.spillFailedLocked(k, err)
			return 0
		}
		b.file = f
	}
	if _, err := b.file.WriteAt(p[:k], b.fileEnd); err != nil {
		b.spillFailedLocked(k, err)
		return 0
	}
	if b.bs.spillFailing.Load() {
		b.bs.spillFailing.Store(false)
	}
	if n := len(b.segs); n > b.head && b.segs[n-1].blk == nil && b.segs[n-1].off+b.segs[n-1].n == b.fileEnd {
		b.segs[n-1].n += k
	} else {
		b.segs = append(b.segs, segment{off: b.fileEnd, n: k})
	}
	b.fileEnd += k
	return int(k)
}

// spillFailedLocked gives back k reserved bytes and keeps the rest of the
// response in memory.
func (b *RespBuffer) spillFailedLocked(k int64, err error) {
	b.bs.Release(k)
	b.noSpill = true
	if !b.bs.spillFailing.Swap(true) {
		b.bs.log.Errorf("w%d: request %s: cannot spill its response to buffer_dir: %v: holding responses in memory only while this lasts", b.worker, b.id, err)
	}
}

// waitRoom waits until the client writer frees room or stops, the deadline
// passes (§5.2) or the request body fails (§6.4, which kills the worker).
func (b *RespBuffer) waitRoom() error {
	var deadline <-chan time.Time
	if d := b.deadline; !d.IsZero() {
		if b.timer == nil {
			b.timer = time.NewTimer(time.Until(d))
		}
		deadline = b.timer.C
	}
	select {
	case <-b.room:
		return nil
	case <-deadline:
		return os.ErrDeadlineExceeded
	case <-b.aborting: // nil without a request body
		return os.ErrClosed
	}
}

// End says that the exchange put the whole body, or, failed, all it will.
func (b *RespBuffer) End(failed bool) {
	b.mu.Lock()
	if !b.ended {
		b.ended, b.failed = true, failed
	}
	b.mu.Unlock()
	if b.timer != nil {
		b.timer.Stop()
	}
	notify(b.more)
}

// Write is the client writer: it writes the queue to the client, flushing
// whenever it runs empty (PROTOCOL.md §6.1), until the exchange ended it, or
// the client fails (§6.5).
func (b *RespBuffer) Write() {
	defer close(b.done)
	x := b.client
	var scratch *[]byte // to read file extents back
	defer func() {
		if scratch != nil {
			respBlocks.Put(scratch)
		}
	}()
	flush := b.chunked // a stream's head goes out before its first chunk
	for {
		b.mu.Lock()
		if b.head == len(b.segs) {
			ended, failed := b.ended, b.failed
			b.mu.Unlock()
			switch {
			case ended && !failed:
				return // net/http flushes the rest with the end of the response
			case flush:
				if x.Flush() != nil {
					b.stop(false)
					return
				}
				flush = false
			case ended:
				return // all that was read before the failure is out (§8.7)
			default:
				<-b.more
			}
			continue
		}
		s := b.segs[b.head]
		b.segs[b.head] = segment{}
		if b.head++; b.head == len(b.segs) {
			b.segs, b.head = b.segs[:0], 0
		}
		b.mu.Unlock()

		var err error
		lost := false
		if s.blk != nil {
			_, err = x.Write(s.data)
		} else {
			if scratch == nil {
				scratch = respBlocks.Get().(*[]byte)
			}
			lost, err = b.sendExtent(s, *scratch)
		}
		b.free(s)
		if err != nil {
			b.stop(lost)
			return
		}
		flush = true
	}
}

// sendExtent writes a spilled extent to the client through buf. lost is
// true when the file, not the client, failed.
func (b *RespBuffer) sendExtent(s segment, buf []byte) (lost bool, err error) {
	for off, end := s.off, s.off+s.n; off < end; {
		k, err := b.file.ReadAt(buf[:min(int64(len(buf)), end-off)], off)
		if err != nil {
			b.bs.log.Errorf("request %s: reading its spilled response back: %v: aborting the response", b.id, err)
			return true, err
		}
		if _, err := b.client.Write(buf[:k]); err != nil {
			return false, err
		}
		off += int64(k)
	}
	return false, nil
}

// free gives back what a segment written to the client held. The file is
// emptied once all of it was written, and buffer_spill_max gets its bytes
// back.
func (b *RespBuffer) free(s segment) {
	b.mu.Lock()
	if s.blk != nil {
		b.mem -= int64(len(s.data))
		b.bs.memHeld.Add(-int64(len(s.data)))
		respBlocks.Put(s.blk)
	} else {
		b.fileOut += s.n
		b.emptyFileLocked()
	}
	b.mu.Unlock()
	notify(b.room)
}

// emptyFileLocked truncates the file once everything spilled to it was
// written or dropped. A file that cannot be truncated keeps its bytes
// counted until it is closed, and takes no more.
func (b *RespBuffer) emptyFileLocked() {
	if b.fileOut != b.fileEnd || b.fileEnd == 0 {
		return
	}
	if err := b.file.Truncate(0); err != nil {
		b.noSpill = true
		return
	}
	b.bs.Release(b.fileEnd)
	b.fileEnd, b.fileOut = 0, 0
}

// stop ends the client writer early: the client went away (§6.5), or the
// buffer lost bytes. What is queued is dropped, and the exchange discards
// the rest of the body.
func (b *RespBuffer) stop(lost bool) {
	b.mu.Lock()
	b.gone = true
	b.broken = lost
	for _, s := range b.segs[b.head:] {
		if s.blk != nil {
			b.mem -= int64(len(s.data))
			b.bs.memHeld.Add(-int64(len(s.data)))
			respBlocks.Put(s.blk)
		} else {
			b.fileOut += s.n
		}
	}
	b.segs, b.head = nil, 0
	if b.file != nil {
		b.emptyFileLocked()
	}
	b.mu.Unlock()
	notify(b.room)
}

// Finish waits for the client writer, closes the temporary file and gives
// back what the buffer still counts. It reports whether bytes were lost.
func (b *RespBuffer) Finish() (lost bool) {
	b.End(true) // a no-op after the exchange's own end
	<-b.done
	if b.file != nil {
		b.file.Close()
		b.bs.Release(b.fileEnd)
		b.fileEnd, b.fileOut = 0, 0
	}
	return b.broken
}
