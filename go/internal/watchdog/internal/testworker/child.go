// Package testworker is the worker the watchdog's tests run: their own test
// binary doubles as it, as in net/http/cgi's host tests. A package whose
// tests need a worker process calls RunIfChild first in its TestMain; its
// tests then start os.Args[0] with AFTERBURN_TEST_CHILD set (1: one lane,
// lanes: several, §2.5). The child is a minimal worker written here, not the
// afterburn library, and is steered by the request path and query.
package testworker

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/afterburn-dev/afterburn/go/internal/watchdog/worker"
)

// RunIfChild serves as the worker, and exits, when this process was started
// as one (AFTERBURN_TEST_CHILD); else it returns at once.
func RunIfChild() {
	switch os.Getenv("AFTERBURN_TEST_CHILD") {
	case "1":
		runChild()
		os.Exit(0)
	case "lanes":
		runLaneChild()
		os.Exit(0)
	}
}

// childFDs opens the protocol descriptors named by AFTERBURN_FDS (§2.2).
func childFDs() (*os.File, *os.File) {
	in, out := 0, 1
	if v := os.Getenv("AFTERBURN_FDS"); v != "" {
		if _, err := fmt.Sscanf(v, "%d,%d", &in, &out); err != nil {
			fmt.Fprintf(os.Stderr, "child: bad AFTERBURN_FDS %q\n", v)
			os.Exit(2)
		}
	}
	return os.NewFile(uintptr(in), "request"), os.NewFile(uintptr(out), "response")
}

func runChild() {
	in, out := childFDs()
	if in.Fd() == 0 {
		// stdio mode: move stdout aside so prints go to stderr (§2.4).
		os.Stdout = os.Stderr
	}
	switch os.Getenv("AFTERBURN_TEST_INIT") {
	case "fail":
		fmt.Fprintln(os.Stderr, "child: init failed on purpose")
		os.Exit(1)
	case "fail-while-marker":
		if _, err := os.Stat(os.Getenv("AFTERBURN_TEST_MARKER")); err == nil {
			fmt.Fprintln(os.Stderr, "child: init failed: marker present")
			os.Exit(1)
		}
	case "hang":
		select {}
	case "banner":
		fmt.Fprint(out, "a banner printed before the library took over\n")
	case "bad-version":
		br := bufio.NewReader(in)
		http.ReadRequest(br)
		fmt.Fprint(out, "HTTP/1.1 400 Bad Request\r\nAfterBurn-Protocol: 7\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}")
		os.Exit(1)
	}
	br := bufio.NewReader(in)
	bw := bufio.NewWriter(out)
	handshakes := 0
	for {
		if crashInNextHead && br.Buffered() == 0 {
			// Dies having read part of the next request's head (issue 8).
			io.ReadFull(in, make([]byte, 10))
			os.Exit(3)
		}
		req, err := http.ReadRequest(br)
		bufferedWithHead = br.Buffered()
		if err == io.EOF {
			os.Exit(0) // §9.4: EOF between requests
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "child: bad request: %v\n", err)
			os.Exit(2)
		}
		if req.Header.Get("AfterBurn-Handshake") != "" {
			handshakes++
			if handshakes > 1 && os.Getenv("AFTERBURN_TEST_INIT") == "handshake-once" {
				select {} // unresponsive to liveness checks (§3.5)
			}
			reply := "HTTP/1.1 200 OK\r\nAfterBurn-Protocol: 1\r\nAfterBurn-Library: test/0\r\n"
			if tokens {
				reply += "AfterBurn-Capabilities: exchange\r\n"
				if tok := req.Header.Get("AfterBurn-Exchange"); tok != "" {
					if os.Getenv("AFTERBURN_TEST_INIT") == "wrong-token-on-repeat" {
						tok += "x"
					}
					reply += "AfterBurn-Exchange: " + tok + "\r\n"
				}
			}
			bw.WriteString(reply + "Content-Length: 0\r\n\r\n")
			bw.Flush()
			continue
		}
		if staleOnNext {
			// PROTOCOL.md §4.6: a late writer's whole response lands while
			// this request is being served.
			staleOnNext = false
			out.WriteString(lateResponse)
		}
		w := bw
		if tok := req.Header.Get("AfterBurn-Exchange"); tokens && tok != "" {
			w = bufio.NewWriter(&tokenEcho{w: out, line: "AfterBurn-Exchange: " + tok + "\r\n"})
		}
		childHandle(req, w, in, out)
		io.Copy(io.Discard, req.Body) // §6.3
		w.Flush()
		bw.Flush()
	}
}

// tokens makes the child list the exchange capability and echo each
// request's token (PROTOCOL.md §4.6), as a library does.
var tokens = os.Getenv("AFTERBURN_TEST_TOKENS") == "1"

// staleOnNext makes the child write lateResponse on its own as soon as it
// has read the next request: a late writer (§4.6).
var staleOnNext bool

const lateResponse = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nstale"

// tokenEcho inserts the token line after the first line written through it,
// the status line of the response.
type tokenEcho struct {
	w    io.Writer
	line string
	done bool
}

func (e *tokenEcho) Write(p []byte) (int, error) {
	if e.done {
		return e.w.Write(p)
	}
	i := strings.Index(string(p), "\r\n")
	if i < 0 {
		return e.w.Write(p) // a status line split across writes is not written here
	}
	e.done = true
	if _, err := e.w.Write(p[:i+2]); err != nil {
		return 0, err
	}
	if _, err := io.WriteString(e.w, e.line); err != nil {
		return 0, err
	}
	if _, err := e.w.Write(p[i+2:]); err != nil {
		return 0, err
	}
	return len(p), nil
}

// leaked is what /leak keeps.
var leaked [][]byte

// bufferedWithHead is how many bytes the child had read past the head of
// the last request when it parsed it: what /buffered reports.
var bufferedWithHead int

// crashInNextHead makes the child exit after reading 10 bytes of the next
// request's head: a worker that crashes while reading headers.
var crashInNextHead bool

func writeResponse(bw *bufio.Writer, status int, hdr []string, body string) {
	fmt.Fprintf(bw, "HTTP/1.1 %d %s\r\n", status, http.StatusText(status))
	for _, h := range hdr {
		bw.WriteString(h + "\r\n")
	}
	fmt.Fprintf(bw, "Content-Length: %d\r\n\r\n%s", len(body), body)
}

// Seen is what /headers reports about the request the child got.
type Seen struct {
	Method  string
	Target  string
	Host    string
	Proto   string
	Header  http.Header
	Body    string
	Trailer http.Header
	TE      []string
	Length  int64
}

func childHandle(req *http.Request, bw *bufio.Writer, in, out *os.File) {
	q := req.URL.Query()
	switch req.URL.Path {
	case "/buffered":
		// How much of the body came with the head (PROTOCOL.md §6.1).
		writeResponse(bw, 200, nil, strconv.Itoa(bufferedWithHead))
	case "/headers":
		body, _ := io.ReadAll(req.Body)
		b, _ := json.Marshal(Seen{Method: req.Method, Target: req.RequestURI, Host: req.Host, Proto: req.Proto, Header: req.Header,
			Body: string(body), Trailer: req.Trailer, TE: req.TransferEncoding, Length: req.ContentLength})
		writeResponse(bw, 200, []string{
			"Content-Type: application/json",
			"X-Multi: a", "X-Multi: b",
			"Set-Cookie: a=1", "Set-Cookie: b=2",
			"Connection: X-Hop", "X-Hop: secret", "Keep-Alive: timeout=5",
			"AfterBurn-Secret: x", "AfterBurn-Error: handler_error", "Proxy-Authenticate: Basic",
		}, string(b))
	case "/echo":
		// Streams the body back as it reads it: full duplex (§6.2).
		fmt.Fprintf(bw, "HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\n")
		if req.ContentLength >= 0 {
			fmt.Fprintf(bw, "Content-Length: %d\r\n\r\n", req.ContentLength)
			io.Copy(flushWriter{bw}, req.Body)
		} else {
			bw.WriteString("Transfer-Encoding: chunked\r\n\r\n")
			io.Copy(chunkWriter{bw}, req.Body)
			bw.WriteString("0\r\n\r\n")
		}
	case "/trailers":
		// The request trailers it got, and the names the request's Trailer
		// field declared (http.ReadRequest makes them r.Trailer's keys), as
		// response trailers, with fields that must not be trailers (§6.7).
		body, _ := io.ReadAll(req.Body)
		var got, declared []string
		for k, vv := range req.Trailer {
			if len(vv) == 0 {
				declared = append(declared, k)
			}
			for _, v := range vv {
				got = append(got, k+"="+v)
			}
		}
		slices.Sort(got)
		slices.Sort(declared)
		fmt.Fprintf(bw, "HTTP/1.1 200 OK\r\nTrailer: X-Got-Checksum, X-Got-Trailers\r\nTransfer-Encoding: chunked\r\n\r\n")
		fmt.Fprintf(bw, "%x\r\n%s\r\n", len(body), body)
		fmt.Fprintf(bw, "0\r\nX-Got-Checksum: %s\r\nX-Got-Trailers: %s\r\nX-Got-Declared: %s\r\n"+
			"AfterBurn-Hidden: x\r\nContent-Type: text/evil\r\nSet-Cookie: evil=1\r\nHost: evil\r\n\r\n",
			req.Trailer.Get("X-Checksum"), strings.Join(got, " "), strings.Join(declared, " "))
	case "/trailer-in-head":
		// X-Both in the head and as a trailer, X-Head-Only in the head only:
		// both declared by the Trailer field (§6.7).
		fmt.Fprintf(bw, "HTTP/1.1 200 OK\r\nTrailer: X-Both, x-head-only\r\nX-Both: head\r\nX-Head-Only: head\r\n"+
			"Transfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\nX-Both: tail\r\n\r\n")
	case "/digest":
		// After the whole body: its SHA-256 as a chunked body, its length
		// as a trailer.
		sum := sha256.New()
		n, _ := io.Copy(sum, req.Body)
		d := hex.EncodeToString(sum.Sum(nil))
		fmt.Fprintf(bw, "HTTP/1.1 200 OK\r\nTrailer: X-Length\r\nTransfer-Encoding: chunked\r\n\r\n"+
			"%x\r\n%s\r\n0\r\nX-Length: %d\r\n\r\n", len(d), d, n)
	case "/crash-after":
		// Reads n bytes of the body, echoing them after a head with head=1,
		// then dies.
		n, _ := strconv.ParseInt(q.Get("n"), 10, 64)
		var echo io.Writer = io.Discard
		if q.Get("head") == "1" {
			fmt.Fprintf(bw, "HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n", req.ContentLength)
			echo = flushWriter{bw}
		}
		io.CopyN(echo, req.Body, n)
		bw.Flush()
		os.Exit(3)
	case "/stream":
		// Lockstep: one response chunk per request line, flushed at once.
		bw.WriteString("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n")
		bw.Flush()
		sc := bufio.NewScanner(req.Body)
		for sc.Scan() {
			msg := "data: " + sc.Text() + "\n\n"
			fmt.Fprintf(bw, "%x\r\n%s\r\n", len(msg), msg)
			bw.Flush()
		}
		bw.WriteString("0\r\n\r\n")
	case "/pattern":
		// Patterned(n), framed by Content-Length, or with chunked=1 in
		// chunks of 64 KiB and with an X-Length trailer; with crash=k the
		// child dies after the first k bytes of the body (§8.7).
		n, _ := strconv.Atoi(q.Get("n"))
		body := Patterned(n)
		if k, err := strconv.Atoi(q.Get("crash")); err == nil {
			body = body[:k]
		}
		chunked := q.Get("chunked") == "1"
		if chunked {
			bw.WriteString("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
		} else {
			fmt.Fprintf(bw, "HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n", n)
		}
		for len(body) > 0 {
			piece := body[:min(len(body), 64<<10)]
			body = body[len(piece):]
			if chunked {
				fmt.Fprintf(bw, "%x\r\n%s\r\n", len(piece), piece)
			} else {
				bw.Write(piece)
			}
		}
		if q.Has("crash") {
			bw.Flush()
			os.Exit(3)
		}
		if chunked {
			fmt.Fprintf(bw, "0\r\nX-Length: %d\r\n\r\n", n)
		}
	case "/head":
		bw.WriteString("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 42\r\n\r\n")
	case "/nocontent":
		bw.WriteString("HTTP/1.1 204 No Content\r\nX-Done: yes\r\n\r\n")
	case "/sleep":
		ms, _ := strconv.Atoi(q.Get("ms"))
		time.Sleep(time.Duration(ms) * time.Millisecond)
		writeResponse(bw, 200, nil, "slept "+q.Get("ms"))
	case "/big":
		n, _ := strconv.Atoi(q.Get("n"))
		fmt.Fprintf(bw, "HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n", n)
		bw.WriteString(strings.Repeat("x", n))
	case "/crash":
		os.Exit(3)
	case "/crash-mid":
		bw.WriteString("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n")
		bw.Flush()
		os.Exit(3)
	case "/print":
		fmt.Println("hello from stdout")
		fmt.Fprintln(os.Stderr, "hello from stderr")
		writeResponse(bw, 200, nil, "printed")
	case "/garbage":
		bw.WriteString("this is not http\r\n\r\n")
	case "/unframed":
		bw.WriteString("HTTP/1.1 200 OK\r\n\r\nclose-delimited")
	case "/continue":
		bw.WriteString("HTTP/1.1 100 Continue\r\n\r\n")
		writeResponse(bw, 200, nil, "late")
	case "/unsolicited":
		writeResponse(bw, 200, nil, "first")
		bw.WriteString("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nstale")
	case "/close":
		writeResponse(bw, 200, []string{"Connection: close"}, "closing")
	case "/exit-after":
		writeResponse(bw, 200, nil, "bye")
		bw.Flush()
		os.Exit(0)
	case "/crash-next-head":
		crashInNextHead = true
		writeResponse(bw, 200, nil, "armed")
	case "/exit-later":
		// Answers, then exits without reading the next request (§9.3).
		writeResponse(bw, 200, nil, "bye")
		bw.Flush()
		time.Sleep(300 * time.Millisecond)
		os.Exit(0)
	case "/stale-on-next":
		staleOnNext = true
		writeResponse(bw, 200, nil, "armed")
	case "/stale-then-hang":
		// Answers, then waits for the next request to sit in its pipe and,
		// without reading a byte of it, writes a stale response and hangs:
		// the watchdog can tell that no handler saw that request (§4.6, §9.3).
		writeResponse(bw, 200, nil, "armed")
		bw.Flush()
		for unreadBytes(in) == 0 {
			time.Sleep(time.Millisecond)
		}
		out.WriteString(lateResponse)
		select {}
	case "/wrong-token":
		writeResponse(bw, 200, []string{"AfterBurn-Exchange: not-yours"}, "wrong")
	case "/fds":
		// Where each open descriptor leads (PROTOCOL.md §2.2).
		var fds []string
		entries, _ := os.ReadDir("/proc/self/fd")
		for _, e := range entries {
			target, _ := os.Readlink("/proc/self/fd/" + e.Name())
			fds = append(fds, e.Name()+"="+target)
		}
		writeResponse(bw, 200, nil, strings.Join(fds, "\n"))
	case "/pid":
		writeResponse(bw, 200, nil, strconv.Itoa(os.Getpid()))
	case "/leak":
		// A fast leak (§9.7): 1 MiB more kept on every request, touched so
		// that it is resident. Answers "PID RSS" with the resident size after.
		b := make([]byte, 1<<20)
		for i := 0; i < len(b); i += 4096 {
			b[i] = 1
		}
		leaked = append(leaked, b)
		st, _ := os.ReadFile("/proc/self/statm")
		rss := worker.StatmResident(st) * int64(os.Getpagesize())
		writeResponse(bw, 200, nil, fmt.Sprintf("%d %d", os.Getpid(), rss))
	case "/hang":
		select {}
	case "/env":
		env := map[string]string{}
		for _, kv := range os.Environ() {
			if k, v, _ := strings.Cut(kv, "="); strings.HasPrefix(k, "AFTERBURN_") {
				env[k] = v
			}
		}
		b, _ := json.Marshal(env)
		writeResponse(bw, 200, []string{"Content-Type: application/json"}, string(b))
	default:
		writeResponse(bw, 200, nil, "ok "+req.Method+" "+req.RequestURI)
	}
}

// Patterned is n bytes repeating with a prime period, so that a piece lost,
// repeated or misplaced by any power-of-two buffer shows.
func Patterned(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i % 251)
	}
	return b
}

type flushWriter struct{ bw *bufio.Writer }

func (f flushWriter) Write(p []byte) (int, error) {
	n, err := f.bw.Write(p)
	if err == nil {
		err = f.bw.Flush()
	}
	return n, err
}

type chunkWriter struct{ bw *bufio.Writer }

func (c chunkWriter) Write(p []byte) (int, error) {
	fmt.Fprintf(c.bw, "%x\r\n", len(p))
	c.bw.Write(p)
	c.bw.WriteString("\r\n")
	return len(p), c.bw.Flush()
}
