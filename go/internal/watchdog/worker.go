package watchdog

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"sync"
	"syscall"
	"time"
)

// protocolVersions is the value of AFTERBURN_PROTOCOL and of the
// AfterBurn-Handshake field: the versions this watchdog speaks (§2.3, §3.1).
const protocolVersions = "1"

// handshakeRequest is the handshake of PROTOCOL.md §3.1, byte for byte.
const handshakeRequest = "OPTIONS * HTTP/1.1\r\n" +
	"Host: afterburn\r\n" +
	"AfterBurn-Handshake: " + protocolVersions + "\r\n" +
	"Content-Length: 0\r\n" +
	"\r\n"

// handshakeMethod is what http.ReadResponse needs to frame the reply.
var handshakeMethod = &http.Request{Method: http.MethodOptions}

// Buffer sizes. The protocol pipes are grown to 1 MiB on Linux
// (pipesize_linux.go); a body copy moves up to bodyBufSize per read and write.
const (
	respBufSize = 64 << 10
	reqBufSize  = 32 << 10 // a head, and a body of up to inlineBodyMax (exchange.go)
	bodyBufSize = 128 << 10
	chunkRoom   = 18 // room for a chunk-size line: 16 hex digits and CRLF
)

// workerState is where a worker is in the pool; guarded by pool.mu.
type workerState int

const (
	wsStarting workerState = iota // started, handshake not answered yet
	wsIdle                        // in the idle queue
	wsBusy                        // owned by an exchange or a liveness check
	wsDraining                    // request pipe closed at shutdown, exiting
	wsParked                      // past its RSS ceiling, waiting for its replacement (§9.7)
	wsRetired                     // handed back to its supervisor
)

// worker is one worker process and its pipes, for one life: a replacement is
// a new worker in the same slot.
type worker struct {
	id      int // slot, AFTERBURN_WORKER_ID (§2.3)
	pid     int
	kind    string // how it came to exist: "exec" or "fork" (§2.6)
	started time.Time
	// deadline bounds its first handshake: init_timeout from an exec,
	// fork_timeout from the fork request (§2.6).
	deadline time.Time
	// reap waits for the process and reaps it: exec.Cmd.Wait for an exec'd
	// worker, os.Process.Wait for an adopted, forked one (proc.go).
	reap func() (*os.ProcessState, error)

	reqW *os.File // request pipe, the watchdog's end
	// reqUnread is the request pipe's read end, which the watchdog keeps
	// only to ask the kernel how many request bytes the worker has not read
	// (PROTOCOL.md §9.3). It is never read.
	reqUnread *os.File
	respR     *os.File      // response pipe, the watchdog's end
	bw        *bufio.Writer // on reqW: request heads, flushed once per request
	// br is the one buffered reader of this worker's life on the response
	// pipe: the old afterburn made one per request and lost the bytes it had
	// read ahead.
	br      *bufio.Reader
	bodyBuf []byte // request body copy buffer, with chunkRoom in front
	respBuf []byte // response body copy buffer
	// head and body are the response of the exchange the worker carries,
	// reused from one to the next (resphead.go).
	head respHead
	body respBody

	mu   sync.Mutex
	dead bool // exited; its process group must not be signalled any more

	exited   chan struct{}    // closed once the process was reaped
	exitErr  error            // reap's error, valid after exited is closed
	exitPS   *os.ProcessState // reap's state, valid after exited is closed
	logsDone sync.WaitGroup

	// tokens: the handshake reply listed the exchange capability, so every
	// later request carries a token its response must echo (PROTOCOL.md §4.6).
	tokens bool
	// forkable: the handshake reply listed fork; only a template does (§2.6).
	forkable bool

	state   workerState // guarded by pool.mu
	gone    bool        // guarded by pool.mu: the process was reaped
	cut     bool        // guarded by pool.mu: killed at the end of shutdown's grace period (§9.4)
	retired chan string // the restart reason, for the slot's supervisor

	// Recycling (PROTOCOL.md §9.7), guarded by pool.mu.
	served     int           // exchanges completed
	recycleAt  int           // served count that makes it due; 0 = never
	rssRetryAt time.Time     // no recycling for max_worker_rss before, after a failed replacement
	statm      *os.File      // /proc/PID/statm, once opened (residentBytes)
	recycling  bool          // a replacement is starting
	recycled   bool          // replaced: it finishes its exchange, then gets EOF
	recycle    chan struct{} // wakes the supervisor to start a replacement
}

// newWorker is a worker on the watchdog's ends of its protocol pipes: the
// request pipe's write end (and its read end, kept to count unread bytes,
// §9.3) and the response pipe's read end, with its buffers and channels.
func newWorker(id int, reqW, reqUnread, respR *os.File) *worker {
	return &worker{
		id:        id,
		reqW:      reqW,
		reqUnread: reqUnread,
		respR:     respR,
		bw:        bufio.NewWriterSize(reqW, reqBufSize),
		br:        bufio.NewReaderSize(respR, respBufSize),
		bodyBuf:   make([]byte, chunkRoom+bodyBufSize+2),
		respBuf:   make([]byte, bodyBufSize),
		exited:    make(chan struct{}),
		retired:   make(chan string, 1),
		recycle:   make(chan struct{}, 1),
	}
}

// wait reaps the worker. Helpers it started die with it: the group is
// killed while the leader is still a zombie, so its id cannot have been
// reused (PROTOCOL.md §2.1).
func (w *worker) wait() {
	if canPeekExit {
		waitExitNoReap(w.pid)
		w.mu.Lock()
		killGroup(w.pid)
		w.dead = true
		w.mu.Unlock()
	}
	ps, err := w.reap()
	w.mu.Lock()
	w.dead = true
	w.mu.Unlock()
	forgetProcess(w.pid)
	w.exitPS, w.exitErr = ps, err
	close(w.exited)
}

// kill sends SIGKILL to the worker's process group and wakes up anything
// blocked on its pipes. Safe to call at any time, from any goroutine.
func (w *worker) kill() {
	w.mu.Lock()
	if !w.dead {
		killGroup(w.pid)
	}
	w.mu.Unlock()
	now := time.Now()
	w.respR.SetReadDeadline(now)
	w.reqW.SetWriteDeadline(now)
}

// killGroup kills the process group led by pid (PROTOCOL.md §2.1). A forked
// worker makes its group itself (§2.6): until it has, only the process can
// be killed.
func killGroup(pid int) {
	if err := syscall.Kill(-pid, syscall.SIGKILL); err == syscall.ESRCH {
		syscall.Kill(pid, syscall.SIGKILL)
	}
}

// exitStatus describes how the process ended, once it has.
func (w *worker) exitStatus() string {
	if w.exitPS != nil {
		return w.exitPS.String()
	}
	if w.exitErr != nil {
		return w.exitErr.Error()
	}
	return "unknown"
}

// initError is a failed handshake: the restart reason (init_failed or
// init_timeout, PROTOCOL.md §9.1) and whether the reply broke the protocol.
type initError struct {
	reason    string
	violation bool // counted as afterburn_protocol_errors_total{kind="handshake"}
	err       error
}

func (e *initError) Error() string { return e.err.Error() }

// handshake sends the handshake of PROTOCOL.md §3.1 and checks the reply
// (§3.2) before deadline.
func (w *worker) handshake(deadline time.Time, skipBanner bool, log *logger) *initError {
	w.respR.SetReadDeadline(deadline)
	w.reqW.SetWriteDeadline(deadline)
	defer func() {
		w.respR.SetReadDeadline(time.Time{})
		w.reqW.SetWriteDeadline(time.Time{})
	}()
	ioFail := func(what string, err error) *initError {
		switch {
		case errors.Is(err, os.ErrDeadlineExceeded):
			return &initError{reason: "init_timeout", err: errors.New("no handshake reply before init_timeout")}
		case err == io.EOF || err == io.ErrUnexpectedEOF || errors.Is(err, syscall.EPIPE):
			return &initError{reason: "init_failed", err: errors.New("exited before its handshake reply")}
		}
		return &initError{reason: "init_failed", err: fmt.Errorf("%s: %v", what, err)}
	}
	bad := func(format string, args ...any) *initError {
		return &initError{reason: "init_failed", violation: true, err: fmt.Errorf(format, args...)}
	}
	var tok exchangeToken
	if w.tokens {
		// PROTOCOL.md §4.6: a repeated handshake carries a token too, so a
		// stale response cannot pass for its reply.
		tok = nextToken()
		w.bw.WriteString(handshakeRequest[:len(handshakeRequest)-len("Content-Length: 0\r\n\r\n")])
		w.bw.WriteString("AfterBurn-Exchange: ")
		w.bw.Write(tok.bytes())
		w.bw.WriteString("\r\nContent-Length: 0\r\n\r\n")
	} else {
		w.bw.WriteString(handshakeRequest)
	}
	if err := w.bw.Flush(); err != nil {
		return ioFail("writing the handshake", err)
	}
	if skipBanner {
		if err := w.skipBanner(log); err != nil {
			return ioFail("reading the handshake reply", err)
		}
	}
	resp, err := http.ReadResponse(w.br, handshakeMethod)
	if err != nil {
		if e := ioFail("", err); e.reason == "init_timeout" || err == io.EOF {
			return e
		}
		return bad("malformed handshake reply: %v", err)
	}
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		return bad("malformed handshake reply body: %v", err)
	}
	got := resp.Header.Get("AfterBurn-Protocol")
	switch {
	case resp.StatusCode == http.StatusBadRequest && got != "":
		// PROTOCOL.md §3.4: log both lists.
		return bad("version mismatch: watchdog offers %q, library speaks %q", protocolVersions, got)
	case resp.StatusCode != http.StatusOK:
		return bad("handshake reply has status %d, want 200", resp.StatusCode)
	case resp.ContentLength != 0:
		return bad("handshake reply has Content-Length %d, want 0", resp.ContentLength)
	case got != protocolVersions:
		return bad("handshake reply chose AfterBurn-Protocol %q, offered %q", got, protocolVersions)
	case tok.set() && !tok.echoedBy(resp.Header):
		return bad("handshake reply carries AfterBurn-Exchange %q, want %q", resp.Header[exchangeField], tok.bytes())
	case w.br.Buffered() > 0:
		return bad("%d unsolicited bytes after the handshake reply", w.br.Buffered())
	}
	if !w.tokens {
		w.tokens = listsCapability(resp.Header["Afterburn-Capabilities"], capabilityExchange)
	}
	w.forkable = listsCapability(resp.Header["Afterburn-Capabilities"], capabilityFork)
	return nil
}

// statusLineStart is what PROTOCOL.md §3.3 scans for in stdio mode.
var statusLineStart = []byte("HTTP/1.1 ")

// skipBanner discards and logs, as worker output, every byte before the first
// "HTTP/1.1 " on the response pipe (PROTOCOL.md §3.3, stdio mode).
func (w *worker) skipBanner(log *logger) error {
	var line []byte
	defer func() {
		if len(line) > 0 {
			log.workerLine(w.id, "stdout", line)
		}
	}()
	for {
		b, err := w.br.Peek(len(statusLineStart))
		if bytes.Equal(b, statusLineStart) {
			return nil
		}
		if err != nil {
			return err
		}
		c, _ := w.br.ReadByte()
		switch {
		case c == '\n':
			log.workerLine(w.id, "stdout", bytes.TrimSuffix(line, []byte("\r")))
			line = line[:0]
		case len(line) >= maxLogLine:
			log.workerLine(w.id, "stdout", line)
			line = append(line[:0], c)
		default:
			line = append(line, c)
		}
	}
}

// idleCheck looks at the response pipe of a worker that has no exchange.
// PROTOCOL.md §9.6: bytes there are unsolicited output, and the worker must
// be replaced before any request can receive them. A hang-up means it is
// exiting. It returns the restart reason, or "" when the worker can be used.
func (w *worker) idleCheck() string {
	if w.br.Buffered() > 0 {
		return "unsolicited_output"
	}
	data, hup := pollPipe(w.respR)
	switch {
	case data:
		return "unsolicited_output"
	case hup:
		return "exited"
	}
	return ""
}

// closeRequest closes the request pipe: a library exits 0 when it reads EOF
// between requests (PROTOCOL.md §9.4).
func (w *worker) closeRequest() {
	w.reqW.Close()
}

// closePipes releases the watchdog's ends once the worker is gone.
func (w *worker) closePipes() {
	w.reqW.Close()
	w.reqUnread.Close()
	w.respR.Close()
	if w.statm != nil {
		w.statm.Close()
	}
}
