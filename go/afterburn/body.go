package afterburn

import (
	"io"
	"math"
	"net/http"
	"strconv"
	"sync"
)

// body is a request body, framed by Content-Length or chunked (PROTOCOL.md §4.2). It
// reads straight from the worker's one bufio.Reader, so the handler streams the body as
// the watchdog writes it (§6.1) and may do so while it writes its response (§6.2).
type body struct {
	c        *conn
	ex       *exchange
	chunked  bool
	remain   int64 // Content-Length: bytes left; chunked: bytes left in the current chunk
	total    int64 // chunked: de-chunked bytes so far
	needCRLF bool  // chunked: the CRLF after a chunk's data is still to come
	done     bool  // the body's end was read
	closed   bool  // the handler called Close
	err      error // sticky framing error
	trailer  http.Header
}

// Read implements io.Reader for the handler. A framing error in the body is returned
// to the handler and also ends the worker after the exchange (PROTOCOL.md §8.8).
func (b *body) Read(p []byte) (int, error) {
	if b.closed {
		return 0, http.ErrBodyReadAfterClose
	}
	return b.read(p)
}

// Close stops the handler's reads. The library still drains what is left (§6.3).
func (b *body) Close() error {
	b.closed = true
	return nil
}

// WriteTo lets io.Copy(w, r.Body) — an echo, a proxy, a hash of the body — move the
// body in copyBufferSize pieces instead of io.Copy's 32 KiB: a piece as large as the
// read buffer or larger is read from the pipe straight into the copy buffer (bufio reads
// a large piece directly, never past the body's end, as read caps it), and a response
// that writes it passes it to the pipe in as few writes. Fewer, larger reads and writes
// and one copy less per byte are most of what the library spends on a large echo
// (PROTOCOL.md §6.2, issue 30).
func (b *body) WriteTo(w io.Writer) (int64, error) {
	if b.closed {
		return 0, http.ErrBodyReadAfterClose
	}
	var total int64
	if rw, ok := w.(*response); ok {
		n, done, err := spliceBody(b, rw) // splice_linux.go
		total += n
		if done {
			return total, err
		}
	}
	bufp := copyBuffers.Get().(*[]byte)
	defer copyBuffers.Put(bufp)
	buf := *bufp
	for {
		n, err := b.read(buf)
		if n > 0 {
			m, werr := w.Write(buf[:n])
			total += int64(m)
			if werr == nil && m < n {
				werr = io.ErrShortWrite
			}
			if werr != nil {
				return total, werr
			}
		}
		if err == io.EOF {
			return total, nil
		}
		if err != nil {
			return total, err
		}
	}
}

// copyBufferSize is the piece WriteTo moves at once: a quarter of lane 1's request
// pipe (the watchdog grows it to 1 MiB), several of a default 64 KiB pipe.
const copyBufferSize = 256 << 10

// copyBuffers are WriteTo's buffers, shared by the lanes: one per copy in progress.
var copyBuffers = sync.Pool{New: func() any {
	b := make([]byte, copyBufferSize)
	return &b
}}

func (b *body) read(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	if b.done {
		return 0, io.EOF
	}
	if len(p) == 0 {
		return 0, nil
	}
	if b.chunked {
		return b.readChunked(p)
	}
	if int64(len(p)) > b.remain {
		p = p[:b.remain]
	}
	n, err := b.c.br.Read(p)
	b.remain -= int64(n)
	if b.remain == 0 {
		b.done = true
		return n, io.EOF // as net/http: EOF with the last bytes
	}
	if n == 0 && err != nil {
		return 0, b.fail(truncated("the request body", err))
	}
	return n, nil
}

func (b *body) fail(perr *protocolError) error {
	b.err = perr
	if b.c.fatal == nil {
		b.c.fatal = perr
	}
	return perr
}

func (b *body) readChunked(p []byte) (int, error) {
	for b.remain == 0 {
		if b.needCRLF {
			if err := b.readDataCRLF(); err != nil {
				return 0, err
			}
			b.needCRLF = false
		}
		size, err := b.readChunkSize()
		if err != nil {
			return 0, err
		}
		if size == 0 {
			if err := b.readTrailers(); err != nil {
				return 0, err
			}
			b.done = true
			return 0, io.EOF
		}
		b.remain = size
	}
	if int64(len(p)) > b.remain {
		p = p[:b.remain]
	}
	n, err := b.c.br.Read(p)
	b.remain -= int64(n)
	if b.remain == 0 {
		b.needCRLF = true
	}
	if n == 0 && err != nil {
		return 0, b.fail(truncated("a chunk", err))
	}
	return n, nil
}

// readDataCRLF checks rule 9: chunk data is followed by CRLF. A wrong first byte is
// refused without waiting for the second.
func (b *body) readDataCRLF() error {
	for i, want := range [2]byte{'\r', '\n'} {
		p, err := b.c.br.Peek(i + 1)
		if err != nil {
			return b.fail(truncated("a chunk", err))
		}
		if p[i] != want {
			return b.fail(badRequest("chunk data not followed by CRLF")) // rule 9
		}
	}
	b.c.br.Discard(2)
	return nil
}

// readChunkSize reads a chunk line: 1–16 hex digits, then optional extensions, which
// are ignored (rule 9). It enforces the body limit as soon as a size announces more
// than the limit allows (rule 12).
func (b *body) readChunkSize() (int64, error) {
	line, err := b.c.readLine(b.c.lim.maxHead)
	if err != nil {
		switch err {
		case errTooLong:
			return 0, b.fail(badRequest("a chunk line is longer than " + strconv.Itoa(b.c.lim.maxHead) + " bytes"))
		case errBareLF, errBareCR:
			return 0, b.fail(badRequest("a chunk line is not ended by CRLF")) // rule 1
		}
		return 0, b.fail(truncated("a chunked body", err))
	}
	var n uint64
	i := 0
	for ; i < len(line); i++ {
		d := unhex(line[i])
		if d < 0 {
			break
		}
		if i == 16 {
			return 0, b.fail(badRequest("chunk size of more than 16 hex digits " + quote(line)))
		}
		n = n<<4 | uint64(d)
	}
	if i == 0 {
		return 0, b.fail(badRequest("chunk size " + quote(line)))
	}
	if rest := line[i:]; len(rest) > 0 {
		// RFC 9112 §7.1.1: chunk-ext = *( BWS ";" BWS ext-name [ BWS "=" BWS ext-val ] )
		j := 0
		for j < len(rest) && (rest[j] == ' ' || rest[j] == '\t') {
			j++
		}
		if j == len(rest) || rest[j] != ';' {
			return 0, b.fail(badRequest("chunk size " + quote(line)))
		}
	}
	if max := b.c.lim.maxBody; max > 0 && n > uint64(max-b.total) {
		return 0, b.fail(bodyTooLarge(max)) // rule 12
	}
	if n > uint64(math.MaxInt64-b.total) {
		return 0, b.fail(badRequest("chunked body longer than 2^63-1 bytes"))
	}
	b.total += int64(n)
	return int64(n), nil
}

func unhex(c byte) int {
	switch {
	case '0' <= c && c <= '9':
		return int(c - '0')
	case 'a' <= c && c <= 'f':
		return int(c-'a') + 10
	case 'A' <= c && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}

// readTrailers reads the trailer section after the last chunk into r.Trailer, with the
// field-line rules of the head and the header limit for its size (rule 9).
func (b *body) readTrailers() error {
	max := b.c.lim.maxHead
	used := 0
	for {
		line, err := b.c.readLine(max2(max-used, 2))
		if err != nil {
			switch err {
			case errTooLong:
				return b.fail(badRequest("the trailer section is larger than " + strconv.Itoa(max) + " bytes"))
			case errBareLF, errBareCR:
				return b.fail(badRequest("a trailer line is not ended by CRLF")) // rule 1
			}
			return b.fail(truncated("the trailer section", err))
		}
		if len(line) == 0 {
			return nil
		}
		used += len(line) + 2
		if used > max {
			return b.fail(badRequest("the trailer section is larger than " + strconv.Itoa(max) + " bytes"))
		}
		f, perr := parseFieldLine(line, 0)
		if perr != nil {
			return b.fail(perr)
		}
		k := b.c.canonicalKey(line[f.name:f.nameEnd])
		b.trailer[k] = append(b.trailer[k], string(line[f.value:f.valueEnd]))
	}
}

// drain reads and discards up to limit bytes of what the handler left unread
// (PROTOCOL.md §6.3). It reports whether the body's end was reached.
func (b *body) drain(limit int64) (bool, error) {
	if b.done {
		return true, nil
	}
	if b.c.scratch == nil {
		b.c.scratch = make([]byte, 32<<10)
	}
	for limit > 0 {
		p := b.c.scratch
		if int64(len(p)) > limit {
			p = p[:limit]
		}
		n, err := b.read(p)
		limit -= int64(n)
		if err == io.EOF {
			return true, nil
		}
		if err != nil {
			return false, err
		}
	}
	return b.done, nil
}
