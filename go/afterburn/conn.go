package afterburn

// Theory of operation.
//
// A worker reads HTTP/1.1 requests from one pipe and writes responses to another, one
// exchange at a time, for its whole life (PROTOCOL.md §2.1, §4.1). The library is split
// in two:
//
//   - the core (conn.go, request.go, body.go, response.go) turns bytes into an
//     *http.Request and a handler's ResponseWriter calls into bytes. It works on any
//     io.Reader and io.Writer and is tested by feeding it the conformance vectors.
//   - the child (child.go, fd_*.go) finds the protocol descriptors, moves them off
//     stdin and stdout, and runs the serve loop of conn over them.
//
// One bufio.Reader lives as long as the process: bytes read ahead belong to the next
// request and must never be dropped (the defect of the old afterburn, RESEARCH.md §1).
// The parser is our own and strict (§4.3): net/http's ReadRequest accepts bare LF,
// obs-fold and Content-Length plus Transfer-Encoding, and buffers up to 1 MiB of head
// before it checks any limit. Every limit here is checked against the bytes buffered so
// far, so an over-long head or body is refused as soon as it crosses the limit.

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"math"
	"os"
	"time"
)

const (
	// defaultMaxHead is the head size accepted without AFTERBURN_MAX_HEADER_BYTES
	// (PROTOCOL.md §7.3).
	defaultMaxHead = 65536
	// headSlack is what §7.3 adds to AFTERBURN_MAX_HEADER_BYTES for the watchdog's fields.
	headSlack = 1024
	// readBufferSize is the size of the one bufio.Reader: a pipe's capacity, so one
	// read(2) can take in everything the watchdog wrote.
	readBufferSize = 64 << 10
	// writeBufferSize bounds what is written to the response pipe in one write(2).
	writeBufferSize = 64 << 10
	// bufferBeforeFraming is how many body bytes a response holds before it commits to
	// a framing: a handler that writes less than this and returns gets Content-Length.
	bufferBeforeFraming = 16 << 10
	// maxPreDrain is how much unread request body the library reads before it sends
	// the response, so that a framing error in a short body is answered as one (§8.8);
	// the rest is drained after the response (§6.3). net/http uses the same bound.
	maxPreDrain = 256 << 10
)

// limits are the request limits of PROTOCOL.md §7.3.
type limits struct {
	maxHead int   // bytes of request line and field lines, CRLFs included
	maxBody int64 // bytes of de-chunked body; 0 means unlimited
}

var defaultLimits = limits{maxHead: defaultMaxHead}

// conn is the protocol state of one worker: the request stream, the response stream
// and the buffers reused from one exchange to the next.
type conn struct {
	lim limits
	br  *bufio.Reader

	// inFile and outFile are the pipes under br and out when they are files, for
	// splice (splice_linux.go); nil otherwise.
	inFile, outFile *os.File
	spliceOK        int8 // both are pipes: 1, not: -1, not yet known: 0
	polled          bool // both are on the runtime's poller (known with spliceOK)
	// pollIn and pollOut are the same pipes on the poller, for a lone lane's echo
	// (pollFiles); nil until one.
	pollIn, pollOut *os.File

	// blocking says the lane reads blocking pipes (a lone lane, openLanes), and passed
	// when it last went through the scheduler (passScheduler).
	blocking bool
	passed   time.Time

	out countingWriter
	bw  *bufio.Writer

	acc     []byte            // a line longer than br's buffer, being assembled
	head    []byte            // the head of the request being parsed
	fields  []fieldPos        // its field lines, as offsets into head
	canon   map[string]string // raw field name → canonical key, bounded
	keys    []string          // scratch for sorting response fields
	pend    []byte            // response body bytes not yet framed
	scratch []byte            // for draining unread request bodies

	// fatal is the first framing error met while reading a request body. After it the
	// stream cannot be trusted: the exchange ends with an error response if nothing
	// was sent yet, and the worker stops (PROTOCOL.md §8.8).
	fatal *protocolError

	// log receives the library's own records (handler panics, misuse) and the lines
	// of Logf. os.Stderr under Serve (PROTOCOL.md §9.5: worker stderr is the log).
	log io.Writer

	// handshake is the handshake reply after its status line (PROTOCOL.md §3.2).
	handshake string

	// inflight finds this lane's exchange by its token when the watchdog cancels it
	// (PROTOCOL.md §2.5); shared by every lane, nil without a cancel pipe.
	inflight *inflight
}

// countingWriter counts the bytes that reached the response pipe, so the library knows
// whether any byte of a response left the process (after that its status is final).
type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

func newConn(r io.Reader, w io.Writer, lim limits) *conn {
	c := &conn{
		lim:   lim,
		br:    bufio.NewReaderSize(r, readBufferSize),
		out:   countingWriter{w: w},
		canon: make(map[string]string),
		pend:  make([]byte, 0, bufferBeforeFraming),

		handshake: defaultHandshake,
	}
	c.bw = bufio.NewWriterSize(&c.out, writeBufferSize)
	c.inFile, _ = r.(*os.File)
	c.outFile, _ = w.(*os.File)
	return c
}

var (
	errBareLF  = errors.New("bare LF")
	errBareCR  = errors.New("bare CR")
	errTooLong = errors.New("too long")
)

// readLine reads one line ended by CRLF and returns it without the CRLF. The slice is
// valid until the next read. A line of more than max bytes (CRLF included) is refused
// with errTooLong as soon as max bytes have been seen without its end, and a bare CR as
// soon as the byte after it is seen (PROTOCOL.md §4.3 rules 1, 9 and 11: limits are
// enforced as bytes arrive). It returns io.EOF only when the stream ended before the
// line's first byte, io.ErrUnexpectedEOF when it ended inside the line.
func (c *conn) readLine(max int) ([]byte, error) {
	c.acc = c.acc[:0]
	scanned := 0 // buffered bytes already searched for LF
	for {
		buf, _ := c.br.Peek(c.br.Buffered())
		if i := bytes.IndexByte(buf[scanned:], '\n'); i >= 0 {
			end := scanned + i + 1
			line := buf[:end]
			if len(c.acc) > 0 {
				c.acc = append(c.acc, line...)
				line = c.acc
			}
			c.br.Discard(end)
			// The first fault in byte order wins, so that the answer (400 or 431) does
			// not depend on how the reads split the line: a bare CR is known once the
			// byte after it is seen, an over-long line once max bytes without LF are.
			if j := bytes.IndexByte(line, '\r'); j >= 0 && j != len(line)-2 && j+1 < max {
				return nil, errBareCR
			}
			if len(line) > max {
				return nil, errTooLong
			}
			if len(line) < 2 || line[len(line)-2] != '\r' {
				return nil, errBareLF
			}
			return line[:len(line)-2], nil
		}
		// No LF yet. A CR not at the very end of what we hold is followed by
		// something other than LF; checked first when its next byte comes before
		// the limit is crossed (byte order, as above).
		if j := bytes.IndexByte(buf, '\r'); j >= 0 && j < len(buf)-1 && len(c.acc)+j+1 < max ||
			len(c.acc) > 0 && c.acc[len(c.acc)-1] == '\r' && len(buf) > 0 {
			return nil, errBareCR
		}
		// With an LF still to come the line is longer than what we hold.
		if len(c.acc)+len(buf) >= max {
			return nil, errTooLong
		}
		if len(buf) == c.br.Size() {
			c.acc = append(c.acc, buf...)
			c.br.Discard(len(buf))
			scanned = 0
			continue
		}
		scanned = len(buf)
		if _, err := c.br.Peek(len(buf) + 1); err != nil {
			if err == io.EOF && len(c.acc)+len(buf) > 0 {
				err = io.ErrUnexpectedEOF
			}
			return nil, err
		}
	}
}

// tchar reports the token characters of RFC 9110 §5.6.2.
var tchar = func() (t [256]bool) {
	for c := '0'; c <= '9'; c++ {
		t[c] = true
	}
	for c := 'a'; c <= 'z'; c++ {
		t[c] = true
		t[c-'a'+'A'] = true
	}
	for _, c := range "!#$%&'*+-.^_`|~" {
		t[c] = true
	}
	return t
}()

func isToken(b []byte) bool {
	if len(b) == 0 {
		return false
	}
	for _, c := range b {
		if !tchar[c] {
			return false
		}
	}
	return true
}

func isTokenString(s string) bool {
	if len(s) == 0 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !tchar[s[i]] {
			return false
		}
	}
	return true
}

// parseDigits parses one or more ASCII digits that fit in 63 bits
// (PROTOCOL.md §4.3 rule 6).
func parseDigits(b []byte) (int64, bool) {
	if len(b) == 0 {
		return 0, false
	}
	var n int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		d := int64(c - '0')
		if n > (math.MaxInt64-d)/10 {
			return 0, false
		}
		n = n*10 + d
	}
	return n, true
}
