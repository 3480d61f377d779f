package exchange

// Large bodies by splice(2) (PROTOCOL.md §6.1).
//
// Carried through the watchdog's buffers, a body is copied twice on each
// way: socket to user space to request pipe, response pipe to user space to
// socket; for a large echo that is most of the watchdog's CPU. For a request
// whose body Content-Length announces as at least spliceBodyMin, the
// exchange takes the client's connection from net/http (a hijack: net/http
// does not expose it otherwise, and bytes of the body may already sit in its
// reader), and the kernel moves the request body from the socket to the
// request pipe, and a response body framed by Content-Length from the
// response pipe to the socket (splice_linux.go). hijackedResponse stands in
// for net/http's ResponseWriter on that connection, so the exchange (run,
// forward, the error answers of §8, deadlines, §9.3, the access log and
// metrics) is the same on both paths. Then the connection goes back to
// net/http (front.Handoff) for the client's next request, unless the
// client or the exchange asked for it to close.

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/afterburn-dev/afterburn/go/internal/watchdog/front"
	"github.com/afterburn-dev/afterburn/go/internal/watchdog/guard"
	"github.com/afterburn-dev/afterburn/go/internal/watchdog/wire"
)

// SpliceBodyMin is the smallest request body, announced by Content-Length,
// that is spliced. Taking the connection, two pipes for the splices and
// net/http's state for the connection again cost some system calls and
// allocations per exchange, little beside the copies saved from 1 MiB up (a
// 1 MiB echo then costs the watchdog half the CPU). Far above replayMax, it
// leaves every body that a second attempt could replay (§9.3) on the copy
// path.
const SpliceBodyMin = 1 << 20

// lingerMax bounds how long a connection closed with part of its request body
// unread is read on, discarding, so that the client gets to read the answer
// before the unread bytes make the kernel reset the connection; net/http
// waits as long (rstAvoidanceDelay).
const lingerMax = 500 * time.Millisecond

// hijackedResponse is the http.ResponseWriter of an exchange on a hijacked
// connection. It writes the head and frames the body as net/http would, and
// has the methods http.ResponseController looks for.
type hijackedResponse struct {
	conn *guard.Conn
	tcp  *net.TCPConn    // under conn
	sock syscall.RawConn // tcp's, for splice(2)
	br   *bufio.Reader   // net/http's: the first body bytes may be in it
	bw   *bufio.Writer
	req  *http.Request

	header   http.Header
	status   int  // 0 until WriteHeader
	bodyless bool // HEAD, 1xx, 204, 304
	chunked  bool
	keep     bool // net/http would keep the connection after this response
	// bodyLeft is how many bytes of the request body were not read from the
	// client yet; the body goroutine's until run has its result.
	bodyLeft int64
	in, out  *splicePipe // for the request body and the response body
	rejoin   *front.Handoff
	stopping *atomic.Bool // Env.Stopping
}

// hijack takes the client's connection from net/http when x.r's body is to
// be spliced, and has the exchange answer on it and send the body with
// spliceBody. It returns false, having changed nothing, for every other
// request: a smaller or chunked body, HTTP/2, a connection that is not TCP
// through the guard, or no splice(2) (off Linux).
func (x *Exchange) hijack() bool {
	r := x.r
	if r.ContentLength < SpliceBodyMin || r.ProtoMajor != 1 {
		return false
	}
	gc, _ := r.Context().Value(guard.ConnKey{}).(*guard.Conn)
	if gc == nil {
		return false
	}
	tcp, ok := gc.Conn.(*net.TCPConn)
	if !ok {
		return false
	}
	sock, err := tcp.SyscallConn()
	if err != nil {
		return false
	}
	in, err := newSplicePipe()
	if err != nil {
		return false
	}
	out, err := newSplicePipe()
	if err != nil {
		in.Close()
		return false
	}
	_, brw, err := x.controller().Hijack()
	if err != nil {
		in.Close()
		out.Close()
		return false
	}
	hj := &hijackedResponse{
		conn: gc, tcp: tcp, sock: sock, br: brw.Reader, bw: brw.Writer, req: r,
		header: make(http.Header), bodyLeft: r.ContentLength, in: in, out: out, rejoin: x.env.Rejoin,
		stopping: x.env.Stopping,
	}
	// The socket is spliced from now on, not read through gc: its read
	// deadlines must reach it at once.
	gc.ReadsAround()
	// net/http clears a hijacked connection's deadlines: read_timeout and
	// write_timeout (§10.2) again, from the request's start as net/http
	// counts them from its head.
	if rt := x.env.Cfg.ReadTimeout; rt > 0 {
		gc.SetReadDeadline(x.entry.Start.Add(rt))
	}
	if wt := x.env.WriteTimeout; wt > 0 {
		gc.SetWriteDeadline(x.entry.Start.Add(wt))
	}
	// PROTOCOL.md §5.4: net/http no longer sends 100 Continue once the
	// connection is hijacked. It lets an HTTP/1.1 request with an Expect
	// through only for 100-continue; an HTTP/1.0 client's is ignored (RFC
	// 9110 §10.1.1). A failed write is met again reading the body.
	if r.ProtoAtLeast(1, 1) && r.Header.Get("Expect") != "" {
		hj.bw.WriteString("HTTP/1.1 100 Continue\r\n\r\n")
		hj.bw.Flush()
	}
	x.hj, x.rw, x.rc = hj, hj, http.NewResponseController(hj)
	// §9.3: a spliced body never is in user space to be kept for a replay
	// (and is larger than replayMax).
	x.replayLost = true
	return true
}

// spliceBody is sendBody on a hijacked connection: the body bytes already
// read from the socket (by net/http's reader, or held by the guard) are
// written first, then the rest is spliced from the socket to the request
// pipe. It fails as sendBody does (§6.4).
func (x *Exchange) spliceBody() bodyFailure {
	hj, l := x.hj, x.l
	for hj.bodyLeft > 0 && (hj.br.Buffered() > 0 || hj.conn.Held() > 0) {
		buf := l.BodyBuffer()
		n, _ := hj.br.Read(buf[:min(int64(len(buf)), hj.bodyLeft)])
		hj.bodyLeft -= int64(n)
		nw, err := l.ReqW.Write(buf[:n])
		x.bodyWritten += int64(nw)
		if err != nil {
			return bodyWorker
		}
	}
	dst, err := l.ReqW.SyscallConn()
	if err != nil {
		return bodyWorker
	}
	read, written, rerr, werr := hj.in.move(dst, hj.sock, hj.bodyLeft)
	hj.bodyLeft -= read
	hj.conn.Bypassed(read)
	x.bodyWritten += written
	switch {
	case werr != nil:
		return bodyWorker
	case rerr != nil:
		return x.abortBody(bodyClient)
	}
	return BodyOK
}

// spliceResponse forwards a response body of n bytes framed by
// Content-Length to a hijacked connection: the bytes the worker's reader
// already holds, then the rest spliced from the response pipe to the
// socket. The reader is left in step with the pipe, nothing skipped, for the
// worker's next response (§4.1). When the client goes away the rest is read
// and discarded (§6.5).
func (x *Exchange) spliceResponse(n int64) *wire.Failure {
	l, hj := x.l, x.hj
	k := int(min(int64(l.BR.Buffered()), n))
	b, _ := l.BR.Peek(k)
	_, werr := hj.Write(b)
	if werr == nil {
		werr = hj.FlushError() // the head and these before the spliced bytes
	}
	l.BR.Discard(k)
	done := int64(k)
	if werr == nil {
		x.entry.Bytes += int64(k)
		src, err := l.RespR.SyscallConn()
		if err != nil {
			return wire.Classify(err)
		}
		var read, written int64
		var rerr error
		read, written, rerr, werr = hj.out.move(hj.sock, src, n-done)
		done += read
		x.entry.Bytes += written
		if rerr != nil {
			return wire.Classify(rerr)
		}
	}
	if werr != nil {
		if _, err := io.CopyN(io.Discard, l.BR, n-done); err != nil {
			return wire.Classify(err)
		}
	}
	x.respDone = true
	return nil
}

func (hj *hijackedResponse) Header() http.Header { return hj.header }

// WriteHeader writes the head as net/http would (front.Head): RFC 9112 §6.3,
// no body follows for HEAD, 1xx, 204 and 304; a body of unknown length is
// chunked, or to an HTTP/1.0 client, which cannot take chunks, ends with the
// connection. The connection is kept when net/http would keep it.
func (hj *hijackedResponse) WriteHeader(code int) {
	if hj.status != 0 {
		return
	}
	hj.status = code
	r := hj.req
	_, framed := hj.header["Content-Length"]
	hj.bodyless = front.Bodyless(r.Method, code)
	hj.chunked = !hj.bodyless && !framed && r.ProtoAtLeast(1, 1)
	hj.keep = !front.Head{Request: r, Status: code, Header: hj.header, Length: -1, Chunked: hj.chunked,
		NoKeepAlives: hj.stopping != nil && hj.stopping.Load()}.Write(hj.bw)
}

// Write writes body bytes, as one chunk when the body is chunked. Like
// net/http it drops a body that must not be sent (the error body of §8.1
// answering a HEAD).
func (hj *hijackedResponse) Write(p []byte) (int, error) {
	switch {
	case hj.bodyless:
		return len(p), nil
	case !hj.chunked:
		return hj.bw.Write(p)
	}
	return front.WriteChunk(hj.bw, p)
}

func (hj *hijackedResponse) FlushError() error { return hj.bw.Flush() }

func (hj *hijackedResponse) SetReadDeadline(t time.Time) error { return hj.conn.SetReadDeadline(t) }

func (hj *hijackedResponse) SetWriteDeadline(t time.Time) error { return hj.conn.SetWriteDeadline(t) }

// EnableFullDuplex has nothing to do: the connection is the exchange's own,
// read and written at once.
func (hj *hijackedResponse) EnableFullDuplex() error { return nil }

// Close ends the exchange on the client's connection. A complete response
// gets the last chunk, with the trailers forward set (§4.4), and is flushed;
// one that must look incomplete (§8.7) does not. The connection then goes
// back to net/http when net/http would have kept it (WriteHeader) and the
// request body was read to its end. Otherwise it is closed; when the request body
// was not read to its end, only after the watchdog stopped writing and read
// on, discarding, until the client closes or lingerMax passes, as net/http
// does.
func (hj *hijackedResponse) Close(complete bool) {
	defer hj.in.Close()
	defer hj.out.Close()
	if complete {
		switch {
		case hj.end() != nil:
		case hj.bodyLeft > 0:
			hj.tcp.CloseWrite()
			hj.tcp.SetReadDeadline(time.Now().Add(lingerMax))
			io.Copy(io.Discard, hj.tcp)
		case hj.keep:
			hj.rejoin.Give(hj.conn)
			return
		}
	}
	hj.conn.Close()
}

// end ends a complete response: the last chunk with the trailers forward set
// (§6.7) when the body is chunked, and everything flushed.
func (hj *hijackedResponse) end() error {
	if hj.chunked {
		front.WriteLastChunk(hj.bw, hj.header)
	}
	return hj.bw.Flush()
}
