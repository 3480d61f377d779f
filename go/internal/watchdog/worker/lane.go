package worker

import (
	"bufio"
	"errors"
	"net/http"
	"os"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/afterburn-dev/afterburn/go/internal/watchdog/proc"
	"github.com/afterburn-dev/afterburn/go/internal/watchdog/rawio"
	"github.com/afterburn-dev/afterburn/go/internal/watchdog/wire"
)

// A lane is one pair of a worker's protocol pipes, request and response,
// carrying one AfterBurn/1 keep-alive stream: one exchange at a time, with
// its own buffers (PROTOCOL.md §2.5). A worker has one lane unless its
// library lists streams and lanes asks for more; the pool hands lanes, not
// workers, to exchanges, and an exchange sees only its lane's pipes.
type Lane struct {
	W *Worker
	N int // 1 for fds 3 and 4, then in AFTERBURN_STREAM_FDS order

	ReqW *os.File // request pipe, the watchdog's end
	// reqUnread is the request pipe's read end, which the watchdog keeps
	// only to ask the kernel how many request bytes the worker has not read
	// (PROTOCOL.md §9.3). It is never read.
	reqUnread *os.File
	RespR     *os.File // response pipe, the watchdog's end
	// Req writes ReqW with raw system calls (rawio), as BR reads RespR:
	// every exchange's bytes go through them; deadlines are set on the files.
	Req  *rawio.FD
	resp *rawio.FD     // BR's: Send waits on it (send.go)
	BW   *bufio.Writer // on Req: request heads, flushed once per request
	// br is the one buffered reader of this lane's life on the response
	// pipe: the old afterburn made one per request and lost the bytes it had
	// read ahead.
	BR *bufio.Reader
	// The body copy buffers are made at first use (bodyBuffer, respBuffer):
	// most exchanges carry bodies that go inline with their head, and a
	// worker forked for one request (§2.7) would otherwise make 256 KiB of
	// garbage every request.
	bodyBuf []byte // request body copy buffer, with chunkRoom in front
	respBuf []byte // response body copy buffer
	// Head and body are the response of the exchange the lane carries,
	// reused from one to the next (resphead.go).
	Head wire.RespHead
	Body wire.RespBody
	send sender // send.go

	// The deadlines on RespR (read) and ReqW (write), as SetDeadlines last
	// put them, so that an exchange asking for the same ones again does not
	// re-arm the pipes' timers. Only the lane's holder sets them; woken says
	// that Wake, from another goroutine, changed them since.
	readDL, writeDL time.Time
	dlKnown         bool
	woken           atomic.Bool
}

func newLane(w *Worker, n int, reqW, reqUnread, respR *os.File) *Lane {
	req, resp := rawio.File(reqW), rawio.File(respR)
	l := &Lane{
		W:         w,
		N:         n,
		ReqW:      reqW,
		reqUnread: reqUnread,
		RespR:     respR,
		Req:       req,
		resp:      resp,
		BW:        bufio.NewWriterSize(req, reqBufSize),
		BR:        bufio.NewReaderSize(resp, respBufSize),
	}
	l.send = newSender(l.flushTimed)
	return l
}

// BodyBuffer is the request body copy buffer, made at first use.
func (l *Lane) BodyBuffer() []byte {
	if l.bodyBuf == nil {
		l.bodyBuf = make([]byte, ChunkRoom+BodyBufSize+2)
	}
	return l.bodyBuf
}

// RespBuffer is the response body copy buffer, made at first use.
func (l *Lane) RespBuffer() []byte {
	if l.respBuf == nil {
		l.respBuf = make([]byte, BodyBufSize)
	}
	return l.respBuf
}

// IdleCheck looks at the response pipe of a lane that has no exchange.
// PROTOCOL.md §9.6: bytes there are unsolicited output, and the worker must
// not be given the lane before any request can receive them. A hang-up
// means it is exiting. It returns the restart reason, or "" when the lane
// can be used.
func (l *Lane) IdleCheck() wire.RestartReason {
	if l.BR.Buffered() > 0 {
		return wire.ReasonUnsolicitedOutput
	}
	data, hup := proc.PollPipe(l.RespR)
	switch {
	case data:
		return wire.ReasonUnsolicitedOutput
	case hup:
		return wire.ReasonExited
	}
	return ""
}

// CloseRequest closes the lane's request pipe: a library ends the lane when
// it reads EOF between requests, and exits 0 once every lane has (§2.5, §9.4).
func (l *Lane) CloseRequest() {
	l.ReqW.Close()
}

// ClosePipes releases the watchdog's ends once the worker is gone, or once
// the lane is surplus (§2.5).
func (l *Lane) ClosePipes() {
	l.ReqW.Close()
	l.reqUnread.Close()
	l.RespR.Close()
}

// SetDeadlines puts read on the response pipe and write on the request
// pipe, unless they are there already. The lane's holder calls it (the
// handshake, an exchange, a drain), never two goroutines at once.
func (l *Lane) SetDeadlines(read, write time.Time) {
	if !l.woken.Swap(false) && l.dlKnown && read.Equal(l.readDL) && write.Equal(l.writeDL) {
		return
	}
	l.RespR.SetReadDeadline(read)
	l.ReqW.SetWriteDeadline(write)
	l.readDL, l.writeDL, l.dlKnown = read, write, true
}

// Wake unblocks whatever waits on the lane's pipes.
func (l *Lane) Wake() {
	l.woken.Store(true)
	now := time.Now()
	l.RespR.SetReadDeadline(now)
	l.ReqW.SetWriteDeadline(now)
}

// capabilityStreams is what a library that serves lanes lists, streamsField
// the field of its handshake reply that says how many at most, and
// preferredField how many it prefers when lanes=auto offered them (§2.5).
const (
	capabilityStreams = "streams"
	streamsField      = "AfterBurn-Streams"
	preferredField    = "AfterBurn-Streams-Preferred"
)

// lanesInUse is L of PROTOCOL.md §2.5 from the handshake reply's fields:
// min(K, N) for lanes the operator asked for, min(K, N, P) for lanes=auto's
// offer, where a reply without AfterBurn-Streams-Preferred (a library that
// did not read the offer, or prefers nothing) gives 1.
func (w *Worker) lanesInUse(streams bool, h http.Header) int {
	l := LanesInUse(len(w.Lanes), streams, h.Get(streamsField))
	if w.Offered {
		l = min(l, LanesInUse(len(w.Lanes), streams, h.Get(preferredField)))
	}
	return l
}

// LanesInUse is L = min(K, N) of PROTOCOL.md §2.5: k lanes made, a library
// that lists streams (and exchange) stating n in AfterBurn-Streams. A reply
// without them, or with an N that is not a positive decimal, gives 1.
func LanesInUse(k int, streams bool, n string) int {
	if k <= 1 || !streams {
		return 1
	}
	v, err := strconv.Atoi(n)
	if err != nil || v < 1 || len(n) > 9 {
		return 1
	}
	return min(k, v)
}

// SettleLanes closes the watchdog's ends of the lanes past inUse, once the
// handshake has settled how many serve (§2.5); the library closes its own.
func (w *Worker) SettleLanes() {
	for _, l := range w.Lanes[w.InUse:] {
		l.ClosePipes()
	}
	if w.InUse == 1 && w.cancelW != nil {
		// One lane is cancelled by a kill (§8.6): the cancel pipe, made for
		// an offer or a lanes=K the library did not take up, has no use.
		w.cancelW.Close()
		w.cancelW = nil
	}
}

// Cancel writes the cancellation of the exchange whose token is tok to the
// worker's cancel pipe (§2.5), in one write. A library that does not read it
// cannot make the watchdog wait: the write gives up after cancelWriteMax.
func (w *Worker) Cancel(tok wire.ExchangeToken) error {
	if w.cancelW == nil {
		return errors.New("no cancel pipe")
	}
	var b [80]byte
	line := append(append(append(b[:0], "cancel "...), tok.Bytes()...), '\n')
	w.cancelW.SetWriteDeadline(time.Now().Add(cancelWriteMax))
	_, err := w.cancelW.Write(line)
	return err
}

// cancelWriteMax bounds a write to a cancel pipe that is full.
const cancelWriteMax = 100 * time.Millisecond

// Label names l in log lines about a worker with several lanes.
func (l *Lane) Label() string {
	if l.W.InUse == 1 {
		return ""
	}
	return " (lane " + strconv.Itoa(l.N) + ")"
}
