package watchdog

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
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

	// lanes are its protocol pipes (lane.go): lanes[0] is fds 3 and 4, the
	// rest those of AFTERBURN_STREAM_FDS (PROTOCOL.md §2.5). Only the first
	// inUse serve; the handshake settles how many.
	lanes []*lane
	inUse int
	// cancelW is the cancel pipe's write end (§2.5); nil with one lane.
	cancelW *os.File

	mu     sync.Mutex
	dead   bool // exited; its process group must not be signalled any more
	killed bool // kill was called

	exited   chan struct{}    // closed once the process was reaped
	exitErr  error            // reap's error, valid after exited is closed
	exitPS   *os.ProcessState // reap's state, valid after exited is closed
	logsDone sync.WaitGroup

	// tokens: the handshake reply listed the exchange capability, so every
	// later request carries a token its response must echo (PROTOCOL.md §4.6).
	tokens bool
	// forkable: the handshake reply listed fork; only a template does (§2.6).
	forkable bool
	// handshaken: the first handshake was answered, and settled the above
	// and inUse.
	handshaken bool

	statm *os.File // /proc/PID/statm, once opened (residentBytes)

	// Isolation (PROTOCOL.md §2.7): set by the spawner before wait runs;
	// nil otherwise. leftovers runs once it has exited, before its process
	// group is killed (what its request left behind); cleanup once it is
	// reaped (its temporary directory).
	leftovers   func(w *worker)
	cleanup     func()
	lastRequest atomic.Pointer[string] // the id of the request it took, for reports
}

// newWorker is a worker on the watchdog's ends of its first lane's protocol
// pipes: the request pipe's write end (and its read end, kept to count
// unread bytes, §9.3) and the response pipe's read end, with its channels.
func newWorker(id int, reqW, reqUnread, respR *os.File) *worker {
	w := &worker{
		id:     id,
		inUse:  1,
		exited: make(chan struct{}),
	}
	w.addLane(reqW, reqUnread, respR)
	return w
}

// addLane gives w one more lane (PROTOCOL.md §2.5).
func (w *worker) addLane(reqW, reqUnread, respR *os.File) {
	w.lanes = append(w.lanes, newLane(w, len(w.lanes)+1, reqW, reqUnread, respR))
}

// first is lane 1, the one the handshake runs on (§2.5).
func (w *worker) first() *lane { return w.lanes[0] }

// serving is the lanes both sides use once the handshake is answered.
func (w *worker) serving() []*lane { return w.lanes[:w.inUse] }

// wait reaps the worker. Helpers it started die with it: the group is
// killed while the leader is still a zombie, so its id cannot have been
// reused (PROTOCOL.md §2.1).
func (w *worker) wait() {
	if canPeekExit {
		waitExitNoReap(w.pid)
		if w.leftovers != nil {
			w.leftovers(w) // §2.7: before its group dies, see what it left
		}
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
	if w.cleanup != nil {
		w.cleanup() // §2.7: once nothing of its group writes there
	}
	close(w.exited)
}

// kill sends SIGKILL to the worker's process group and wakes up anything
// blocked on its pipes. Safe to call at any time, from any goroutine.
func (w *worker) kill() {
	w.mu.Lock()
	if !w.dead {
		killGroup(w.pid)
	}
	w.killed = true
	w.mu.Unlock()
	for _, l := range w.lanes {
		l.wake()
	}
}

// hasExited reports whether the process was reaped.
func (w *worker) hasExited() bool {
	select {
	case <-w.exited:
		return true
	default:
		return false
	}
}

// wasKilled reports whether kill was called: a lane's pipe that fails then
// failed because its worker was killed, not because its deadline passed.
func (w *worker) wasKilled() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.killed
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
	reason    restartReason
	violation bool // counted as afterburn_protocol_errors_total{kind="handshake"}
	err       error
}

func (e *initError) Error() string { return e.err.Error() }

// handshake sends the handshake of PROTOCOL.md §3.1 and checks the reply
// (§3.2) before deadline.
func (w *worker) handshake(deadline time.Time, skipBanner bool, log *logger) *initError {
	l := w.first() // §2.5: the handshake runs on lane 1 only
	l.respR.SetReadDeadline(deadline)
	l.reqW.SetWriteDeadline(deadline)
	defer func() {
		l.respR.SetReadDeadline(time.Time{})
		l.reqW.SetWriteDeadline(time.Time{})
	}()
	ioFail := func(what string, err error) *initError {
		switch {
		case errors.Is(err, os.ErrDeadlineExceeded):
			return &initError{reason: reasonInitTimeout, err: errors.New("no handshake reply before init_timeout")}
		case err == io.EOF || err == io.ErrUnexpectedEOF || errors.Is(err, syscall.EPIPE):
			return &initError{reason: reasonInitFailed, err: w.exitedBeforeReply()}
		}
		return &initError{reason: reasonInitFailed, err: fmt.Errorf("%s: %v", what, err)}
	}
	bad := func(format string, args ...any) *initError {
		return &initError{reason: reasonInitFailed, violation: true, err: fmt.Errorf(format, args...)}
	}
	var tok exchangeToken
	if w.tokens {
		// PROTOCOL.md §4.6: a repeated handshake carries a token too, so a
		// stale response cannot pass for its reply.
		tok = nextToken()
		l.bw.WriteString(handshakeRequest[:len(handshakeRequest)-len("Content-Length: 0\r\n\r\n")])
		l.bw.WriteString("AfterBurn-Exchange: ")
		l.bw.Write(tok.bytes())
		l.bw.WriteString("\r\nContent-Length: 0\r\n\r\n")
	} else {
		l.bw.WriteString(handshakeRequest)
	}
	if err := l.bw.Flush(); err != nil {
		return ioFail("writing the handshake", err)
	}
	if skipBanner {
		if err := w.skipBanner(log); err != nil {
			return ioFail("reading the handshake reply", err)
		}
	}
	// A worker that exits during initialisation closes the response pipe
	// before a byte of its reply: that is an exit (PROTOCOL.md §9.1), not a
	// malformed reply, which http.ReadResponse would call "unexpected EOF".
	if _, err := l.br.Peek(1); err != nil {
		return ioFail("reading the handshake reply", err)
	}
	resp, err := http.ReadResponse(l.br, handshakeMethod)
	if err != nil {
		if e := ioFail("", err); e.reason == reasonInitTimeout {
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
	case l.br.Buffered() > 0:
		return bad("%d unsolicited bytes after the handshake reply", l.br.Buffered())
	}
	if !w.handshaken {
		// The first handshake: what the library implements.
		w.handshaken = true
		caps := resp.Header["Afterburn-Capabilities"]
		w.tokens = listsCapability(caps, capabilityExchange)
		w.forkable = listsCapability(caps, capabilityFork)
		w.inUse = lanesInUse(len(w.lanes), w.tokens && listsCapability(caps, capabilityStreams), resp.Header.Get(streamsField))
	}
	return nil
}

// exitedBeforeReply is why a handshake found the response pipe closed. The
// supervisor adds the exit status, and logs the worker's stderr first (§9.1).
func (w *worker) exitedBeforeReply() error {
	if !w.handshaken {
		return errors.New("exited during initialisation, before its handshake reply")
	}
	return errors.New("exited before its handshake reply")
}

// statusLineStart is what PROTOCOL.md §3.3 scans for in stdio mode.
var statusLineStart = []byte("HTTP/1.1 ")

// skipBanner discards and logs, as worker output, every byte before the first
// "HTTP/1.1 " on the response pipe (PROTOCOL.md §3.3, stdio mode).
func (w *worker) skipBanner(log *logger) error {
	br := w.first().br
	var line []byte
	defer func() {
		if len(line) > 0 {
			log.workerLine(w.id, w.pid, "stdout", line)
		}
	}()
	for {
		b, err := br.Peek(len(statusLineStart))
		if bytes.Equal(b, statusLineStart) {
			return nil
		}
		if err != nil {
			return err
		}
		c, _ := br.ReadByte()
		switch {
		case c == '\n':
			log.workerLine(w.id, w.pid, "stdout", bytes.TrimSuffix(line, []byte("\r")))
			line = line[:0]
		case len(line) >= maxLogLine:
			log.workerLine(w.id, w.pid, "stdout", line)
			line = append(line[:0], c)
		default:
			line = append(line, c)
		}
	}
}

// closePipes releases the watchdog's ends once the worker is gone.
func (w *worker) closePipes() {
	for _, l := range w.lanes {
		l.closePipes()
	}
	if w.cancelW != nil {
		w.cancelW.Close()
	}
	if w.statm != nil {
		w.statm.Close()
	}
}

// exitGrace is how long the end of one of a process's pipes (a template's
// control socket, a lane, §2.5) waits for its exit to show before the end
// itself is the reason: a dying process closes its descriptors a moment
// before it is a zombie.
const exitGrace = 100 * time.Millisecond

// awaitExit waits up to exitGrace for w to have exited, and reports whether
// it has.
func (w *worker) awaitExit() bool {
	t := time.NewTimer(exitGrace)
	defer t.Stop()
	select {
	case <-w.exited:
		return true
	case <-t.C:
		return false
	}
}

// residentBytes is the worker's resident set size, 0 if unknown. It reads
// /proc/PID/statm, opened once for the worker's life: after every exchange
// (PROTOCOL.md §9.7) that is one pread(2) of a few dozen bytes, which the
// kernel fills from counters it keeps anyway. The exchanges of a worker's
// lanes call it at once (§2.5): the file is opened under w.mu; closePipes
// closes it.
func (w *worker) residentBytes() int64 {
	w.mu.Lock()
	if w.statm == nil {
		f, err := os.Open("/proc/" + strconv.Itoa(w.pid) + "/statm")
		if err != nil {
			w.mu.Unlock()
			return 0
		}
		w.statm = f
	}
	statm := w.statm
	w.mu.Unlock()
	var buf [128]byte
	n, _ := statm.ReadAt(buf[:], 0)
	return statmResident(buf[:n]) * int64(os.Getpagesize())
}

// statmResident is the second field of /proc/PID/statm: resident pages.
func statmResident(b []byte) int64 {
	_, rest, ok := bytes.Cut(b, []byte(" "))
	if !ok {
		return 0
	}
	field, _, _ := bytes.Cut(rest, []byte(" "))
	n, err := strconv.ParseInt(string(field), 10, 64)
	if err != nil {
		return 0
	}
	return n
}
