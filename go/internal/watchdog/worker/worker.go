package worker

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

	"github.com/afterburn-dev/afterburn/go/internal/watchdog/obs"
	"github.com/afterburn-dev/afterburn/go/internal/watchdog/proc"
	"github.com/afterburn-dev/afterburn/go/internal/watchdog/wire"
)

// ProtocolVersions is the value of AFTERBURN_PROTOCOL and of the
// AfterBurn-Handshake field: the versions this watchdog speaks (§2.3, §3.1).
const ProtocolVersions = "1"

// handshakeRequest is the handshake of PROTOCOL.md §3.1, byte for byte.
const handshakeRequest = "OPTIONS * HTTP/1.1\r\n" +
	"Host: afterburn\r\n" +
	"AfterBurn-Handshake: " + ProtocolVersions + "\r\n" +
	"Content-Length: 0\r\n" +
	"\r\n"

// CapabilityForkChild is what a template that forks its workers once, and
// keeps them as its children, lists beside fork (PROTOCOL.md §2.6).
const CapabilityForkChild = "fork-child"

// CapabilityUnaskedHandshake is what a template lists beside fork-child when
// the workers of its single fork can answer the handshake unasked (§2.6).
const CapabilityUnaskedHandshake = "unasked-handshake"

// handshakeMethod is what http.ReadResponse needs to frame the reply.
var handshakeMethod = &http.Request{Method: http.MethodOptions}

// Buffer sizes. The protocol pipes are grown to 1 MiB on Linux
// (pipesize_linux.go); a body copy moves up to bodyBufSize per read and write.
const (
	respBufSize = 64 << 10
	reqBufSize  = 32 << 10 // a head, and a body of up to inlineBodyMax (exchange.go)
	BodyBufSize = 128 << 10
	ChunkRoom   = 18 // room for a chunk-size line: 16 hex digits and CRLF
)

// Worker is one worker process and its pipes, for one life: a replacement is
// a new worker in the same slot.
type Worker struct {
	ID      int // slot, AFTERBURN_WORKER_ID (§2.3)
	Pid     int
	Kind    string // how it came to exist: "exec" or "fork" (§2.6)
	Started time.Time
	// Deadline bounds its first handshake: init_timeout from an exec,
	// fork_timeout from the fork request (§2.6).
	Deadline time.Time
	// Reap waits for the process and reaps it: exec.Cmd.Wait for an exec'd
	// worker, os.Process.Wait for an adopted, forked one (proc.go).
	Reap func() (*os.ProcessState, error)
	// Exit, when set, stands for proc.WaitExitNoReap and Reap: a worker that
	// stays its template's child (fork-child, §2.6) is not the watchdog's to
	// wait for; its template reports the exit and reaps on the watchdog's word.
	Exit ExitSource

	// Lanes are its protocol pipes (lane.go): lanes[0] is fds 3 and 4, the
	// rest those of AFTERBURN_STREAM_FDS (PROTOCOL.md §2.5). Only the first
	// inUse serve; the handshake settles how many.
	Lanes []*Lane
	InUse int
	// cancelW is the cancel pipe's write end (§2.5); nil with one lane.
	cancelW *os.File
	// Offered: its lanes 2 to K are lanes=auto's offer, and it serves as
	// many as its library prefers (§2.5, lane.go).
	Offered bool

	Mu     sync.Mutex
	Dead   bool // exited; its process group must not be signalled any more
	killed bool // kill was called

	Exited   chan struct{}    // closed once the process was reaped
	ExitErr  error            // reap's error, valid after exited is closed
	exitPS   *os.ProcessState // reap's state, valid after exited is closed
	exitText string           // Exit's account of it, valid after exited is closed
	logsDone sync.WaitGroup

	// Tokens: the handshake reply listed the exchange capability, so every
	// later request carries a token its response must echo (PROTOCOL.md §4.6).
	Tokens bool
	// Forkable: the handshake reply listed fork; only a template does (§2.6).
	Forkable bool
	// ForkChild: the template also listed fork-child, the single fork (§2.6).
	ForkChild bool
	// ForkUnasked: it also listed unasked-handshake: it may be asked for
	// workers that answer the handshake unasked (§2.6).
	ForkUnasked bool
	// Unasked: this worker was forked with "fork-child <slot> unasked" and
	// writes its first handshake reply unasked: no handshake request is
	// written to it (§2.6, §3.1). Set by the spawner; a repeated handshake
	// (§3.5) is asked as ever.
	Unasked bool
	// handshaken: the first handshake was answered, and settled the above
	// and inUse.
	handshaken bool

	Statm *os.File // /proc/PID/statm, once opened (residentBytes)

	// Isolation (PROTOCOL.md §2.7): set by the spawner before wait runs;
	// nil otherwise. leftovers runs once it has exited, before its process
	// group is killed (what its request left behind); cleanup once it is
	// reaped (its temporary directory).
	Leftovers   func(w *Worker)
	Cleanup     func()
	LastRequest atomic.Pointer[string] // the id of the request it took, for reports
	// CheckReply, when set by the spawner, is what its first handshake reply
	// must also carry (§2.7: a worker of the single fork names its temporary
	// directory); an error makes the reply malformed.
	CheckReply func(http.Header) error
}

// newWorker is a worker on the watchdog's ends of its first lane's protocol
// pipes: the request pipe's write end (and its read end, kept to count
// unread bytes, §9.3) and the response pipe's read end, with its channels.
func New(id int, reqW, reqUnread, respR *os.File) *Worker {
	w := &Worker{
		ID:     id,
		InUse:  1,
		Exited: make(chan struct{}),
	}
	w.addLane(reqW, reqUnread, respR)
	return w
}

// addLane gives w one more lane (PROTOCOL.md §2.5).
func (w *Worker) addLane(reqW, reqUnread, respR *os.File) {
	w.Lanes = append(w.Lanes, newLane(w, len(w.Lanes)+1, reqW, reqUnread, respR))
}

// First is lane 1, the one the handshake runs on (§2.5).
func (w *Worker) First() *Lane { return w.Lanes[0] }

// serving is the lanes both sides use once the handshake is answered.
func (w *Worker) serving() []*Lane { return w.Lanes[:w.InUse] }

// Wait reaps the worker. Helpers it started die with it: the group is
// killed while the leader is still a zombie, so its id cannot have been
// reused (PROTOCOL.md §2.1).
func (w *Worker) Wait() {
	if w.Exit != nil {
		w.waitExit()
		return
	}
	if proc.CanPeekExit {
		proc.WaitExitNoReap(w.Pid)
		if w.Leftovers != nil {
			w.Leftovers(w) // §2.7: before its group dies, see what it left
		}
		w.Mu.Lock()
		proc.KillGroup(w.Pid)
		w.Dead = true
		w.Mu.Unlock()
	}
	ps, err := w.Reap()
	w.Mu.Lock()
	w.Dead = true
	w.Mu.Unlock()
	proc.ForgetProcess(w.Pid)
	w.exitPS, w.ExitErr = ps, err
	if w.Cleanup != nil {
		w.Cleanup() // §2.7: once nothing of its group writes there
	}
	close(w.Exited)
}

// ExitSource is how the watchdog learns of the exit of a worker that is not
// its child, and has it reaped (fork-child, PROTOCOL.md §2.6).
type ExitSource interface {
	// AwaitExit returns once the process has exited and is still a zombie,
	// so that its pid, and its process group's id, cannot be reused yet.
	AwaitExit()
	// Reap has the zombie reaped; status says how it ended.
	Reap() (status string, err error)
}

// waitExit is Wait for a worker whose exit comes from w.Exit: the same
// order, leftovers and group before the reap.
func (w *Worker) waitExit() {
	w.Exit.AwaitExit()
	if w.Leftovers != nil {
		w.Leftovers(w)
	}
	w.Mu.Lock()
	proc.KillGroup(w.Pid)
	w.Dead = true
	w.Mu.Unlock()
	w.exitText, w.ExitErr = w.Exit.Reap()
	proc.ForgetProcess(w.Pid)
	if w.Cleanup != nil {
		w.Cleanup()
	}
	close(w.Exited)
}

// Kill sends SIGKILL to the worker's process group and wakes up anything
// blocked on its pipes. Safe to call at any time, from any goroutine.
func (w *Worker) Kill() {
	w.Mu.Lock()
	if !w.Dead {
		proc.KillGroup(w.Pid)
	}
	w.killed = true
	w.Mu.Unlock()
	for _, l := range w.Lanes {
		l.Wake()
	}
}

// HasExited reports whether the process was reaped.
func (w *Worker) HasExited() bool {
	select {
	case <-w.Exited:
		return true
	default:
		return false
	}
}

// WasKilled reports whether kill was called: a lane's pipe that fails then
// failed because its worker was killed, not because its deadline passed.
func (w *Worker) WasKilled() bool {
	w.Mu.Lock()
	defer w.Mu.Unlock()
	return w.killed
}

// ExitStatus describes how the process ended, once it has.
func (w *Worker) ExitStatus() string {
	if w.exitPS != nil {
		return w.exitPS.String()
	}
	if w.exitText != "" {
		return w.exitText
	}
	if w.ExitErr != nil {
		return w.ExitErr.Error()
	}
	return "unknown"
}

// InitError is a failed handshake: the restart reason (init_failed or
// init_timeout, PROTOCOL.md §9.1) and whether the reply broke the protocol.
type InitError struct {
	Reason    wire.RestartReason
	Violation bool // counted as afterburn_protocol_errors_total{kind="handshake"}
	Err       error
}

func (e *InitError) Error() string { return e.Err.Error() }

// Handshake sends the handshake of PROTOCOL.md §3.1 and checks the reply
// (§3.2) before deadline.
func (w *Worker) Handshake(deadline time.Time, skipBanner bool, log *obs.Logger) *InitError {
	l := w.First() // §2.5: the handshake runs on lane 1 only
	l.SetDeadlines(deadline, deadline)
	defer l.SetDeadlines(time.Time{}, time.Time{})
	ioFail := func(what string, err error) *InitError {
		switch {
		case errors.Is(err, os.ErrDeadlineExceeded):
			return &InitError{Reason: wire.ReasonInitTimeout, Err: errors.New("no handshake reply before init_timeout")}
		case err == io.EOF || err == io.ErrUnexpectedEOF || errors.Is(err, syscall.EPIPE):
			return &InitError{Reason: wire.ReasonInitFailed, Err: w.exitedBeforeReply()}
		}
		return &InitError{Reason: wire.ReasonInitFailed, Err: fmt.Errorf("%s: %v", what, err)}
	}
	bad := func(format string, args ...any) *InitError {
		return &InitError{Reason: wire.ReasonInitFailed, Violation: true, Err: fmt.Errorf(format, args...)}
	}
	var tok wire.ExchangeToken
	switch {
	case w.Unasked && !w.handshaken:
		// §2.6: the first reply comes unasked: there is no request to write,
		// and the Flush below has nothing to do.
	case w.Tokens:
		// PROTOCOL.md §4.6: a repeated handshake carries a token too, so a
		// stale response cannot pass for its reply.
		tok = wire.NextToken()
		l.BW.WriteString(handshakeRequest[:len(handshakeRequest)-len("Content-Length: 0\r\n\r\n")])
		l.BW.WriteString("AfterBurn-Exchange: ")
		l.BW.Write(tok.Bytes())
		l.BW.WriteString("\r\nContent-Length: 0\r\n\r\n")
	default:
		l.BW.WriteString(handshakeRequest)
	}
	if err := l.BW.Flush(); err != nil {
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
	if _, err := l.BR.Peek(1); err != nil {
		return ioFail("reading the handshake reply", err)
	}
	resp, err := http.ReadResponse(l.BR, handshakeMethod)
	if err != nil {
		if e := ioFail("", err); e.Reason == wire.ReasonInitTimeout {
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
		return bad("version mismatch: watchdog offers %q, library speaks %q", ProtocolVersions, got)
	case resp.StatusCode != http.StatusOK:
		return bad("handshake reply has status %d, want 200", resp.StatusCode)
	case resp.ContentLength != 0:
		return bad("handshake reply has Content-Length %d, want 0", resp.ContentLength)
	case got != ProtocolVersions:
		return bad("handshake reply chose AfterBurn-Protocol %q, offered %q", got, ProtocolVersions)
	case tok.Set() && !tok.EchoedBy(resp.Header):
		return bad("handshake reply carries AfterBurn-Exchange %q, want %q", resp.Header[wire.ExchangeField], tok.Bytes())
	case l.BR.Buffered() > 0:
		return bad("%d unsolicited bytes after the handshake reply", l.BR.Buffered())
	}
	if !w.handshaken {
		// The first handshake: what the library implements.
		if w.CheckReply != nil {
			if err := w.CheckReply(resp.Header); err != nil {
				return bad("handshake reply: %v", err)
			}
		}
		w.handshaken = true
		caps := resp.Header["Afterburn-Capabilities"]
		w.Tokens = wire.ListsCapability(caps, wire.CapabilityExchange)
		w.Forkable = wire.ListsCapability(caps, wire.CapabilityFork)
		w.ForkChild = w.Forkable && wire.ListsCapability(caps, CapabilityForkChild)
		w.ForkUnasked = w.ForkChild && wire.ListsCapability(caps, CapabilityUnaskedHandshake)
		w.InUse = w.lanesInUse(w.Tokens && wire.ListsCapability(caps, capabilityStreams), resp.Header)
	}
	return nil
}

// exitedBeforeReply is why a handshake found the response pipe closed. The
// supervisor adds the exit status, and logs the worker's stderr first (§9.1).
func (w *Worker) exitedBeforeReply() error {
	if !w.handshaken {
		return errors.New("exited during initialisation, before its handshake reply")
	}
	return errors.New("exited before its handshake reply")
}

// statusLineStart is what PROTOCOL.md §3.3 scans for in stdio mode.
var statusLineStart = []byte("HTTP/1.1 ")

// skipBanner discards and logs, as worker output, every byte before the first
// "HTTP/1.1 " on the response pipe (PROTOCOL.md §3.3, stdio mode).
func (w *Worker) skipBanner(log *obs.Logger) error {
	br := w.First().BR
	var line []byte
	defer func() {
		if len(line) > 0 {
			log.WorkerLine(w.ID, w.Pid, "stdout", line)
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
			log.WorkerLine(w.ID, w.Pid, "stdout", bytes.TrimSuffix(line, []byte("\r")))
			line = line[:0]
		case len(line) >= obs.MaxLogLine:
			log.WorkerLine(w.ID, w.Pid, "stdout", line)
			line = append(line[:0], c)
		default:
			line = append(line, c)
		}
	}
}

// ClosePipes releases the watchdog's ends once the worker is gone.
func (w *Worker) ClosePipes() {
	for _, l := range w.Lanes {
		l.ClosePipes()
	}
	if w.cancelW != nil {
		w.cancelW.Close()
	}
	if w.Statm != nil {
		w.Statm.Close()
	}
}

// ExitGrace is how long the end of one of a process's pipes (a template's
// control socket, a lane, §2.5) waits for its exit to show before the end
// itself is the reason: a dying process closes its descriptors a moment
// before it is a zombie.
const ExitGrace = 100 * time.Millisecond

// AwaitExit waits up to exitGrace for w to have exited, and reports whether
// it has.
func (w *Worker) AwaitExit() bool {
	t := time.NewTimer(ExitGrace)
	defer t.Stop()
	select {
	case <-w.Exited:
		return true
	case <-t.C:
		return false
	}
}

// ResidentBytes is the worker's resident set size, 0 if unknown. It reads
// /proc/PID/statm, opened once for the worker's life: after every exchange
// (PROTOCOL.md §9.7) that is one pread(2) of a few dozen bytes, which the
// kernel fills from counters it keeps anyway. The exchanges of a worker's
// lanes call it at once (§2.5): the file is opened under w.mu; closePipes
// closes it.
func (w *Worker) ResidentBytes() int64 {
	w.Mu.Lock()
	if w.Statm == nil {
		f, err := os.Open("/proc/" + strconv.Itoa(w.Pid) + "/statm")
		if err != nil {
			w.Mu.Unlock()
			return 0
		}
		w.Statm = f
	}
	statm := w.Statm
	w.Mu.Unlock()
	var buf [128]byte
	n, _ := statm.ReadAt(buf[:], 0)
	return StatmResident(buf[:n]) * int64(os.Getpagesize())
}

// StatmResident is the second field of /proc/PID/statm: resident pages.
func StatmResident(b []byte) int64 {
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
