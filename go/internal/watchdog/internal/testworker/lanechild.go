package testworker

// A minimal worker with lanes (PROTOCOL.md §2.5), run by the test binary
// when AFTERBURN_TEST_CHILD=lanes: each lane a goroutine, the cancel pipe a
// goroutine, steered by the request path. AFTERBURN_TEST_STREAMS is the
// most lanes it states ("none": it does not list streams);
// AFTERBURN_TEST_PREFER, when set, the lanes it prefers under lanes=auto: it
// then reads the offer's variables and states AfterBurn-Streams-Preferred.
// Without it, it ignores an offer, as a library that predates auto does.

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

func runLaneChild() {
	passGate(os.Getenv("AFTERBURN_TEST_GATE"))
	// SIGUSR1: every lane ends at once, the process staying (closeLanes).
	usr1 := make(chan os.Signal, 1)
	signal.Notify(usr1, syscall.SIGUSR1)
	go func() {
		<-usr1
		closeLanes()
	}()
	lanes := [][2]*os.File{childLane(os.Getenv("AFTERBURN_FDS"))}
	prefer := os.Getenv("AFTERBURN_TEST_PREFER")
	streamVar, cancelVar := "AFTERBURN_STREAM_FDS", "AFTERBURN_STREAM_CANCEL_FD"
	if prefer != "" && os.Getenv("AFTERBURN_STREAM_OFFER_FDS") != "" {
		streamVar, cancelVar = "AFTERBURN_STREAM_OFFER_FDS", "AFTERBURN_STREAM_OFFER_CANCEL_FD"
		os.Setenv("AFTERBURN_STREAM_FDS", os.Getenv(streamVar)) // for laneFDs
	}
	if v := os.Getenv(streamVar); v != "" {
		fds := strings.Split(v, ",")
		for i := 0; i+1 < len(fds); i += 2 {
			lanes = append(lanes, childLane(fds[i]+","+fds[i+1]))
		}
	}
	stated := os.Getenv("AFTERBURN_TEST_STREAMS")
	inUse := 1
	if n, err := strconv.Atoi(stated); err == nil {
		inUse = min(n, len(lanes))
	}
	if p, err := strconv.Atoi(prefer); err == nil && streamVar != "AFTERBURN_STREAM_FDS" {
		inUse = min(inUse, p) // §2.5: L = min(K, N, P) under an offer
	}
	for _, l := range lanes[inUse:] { // §2.5: the library closes the surplus
		l[0].Close()
		l[1].Close()
	}
	c := &laneChild{stated: stated, prefer: prefer, k: len(lanes), cancels: map[string]chan struct{}{}}
	if v := os.Getenv(cancelVar); v != "" {
		fd, _ := strconv.Atoi(v)
		go c.readCancels(os.NewFile(uintptr(fd), "cancel"))
	}
	var wg sync.WaitGroup
	for i, l := range lanes[:inUse] {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.serve(i+1, l[0], l[1])
		}()
	}
	wg.Wait() // §2.5: exit 0 once every lane has ended
}

// passGate waits, before the handshake, until the test opens the FIFO at
// path for writing, if there is one: a worker started after the test made
// it stays starting until the test lets it go.
func passGate(path string) {
	if path == "" {
		return
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode()&os.ModeNamedPipe == 0 {
		return
	}
	f, err := os.Open(path) // blocks until the test opens the write end
	if err != nil {
		fmt.Fprintf(os.Stderr, "child: gate: %v\n", err)
		os.Exit(2)
	}
	io.Copy(io.Discard, f)
	f.Close()
}

// laneFDs lists the descriptor numbers of every lane, two per lane.
func laneFDs() []int {
	fds := os.Getenv("AFTERBURN_FDS")
	if more := os.Getenv("AFTERBURN_STREAM_FDS"); more != "" {
		fds += "," + more
	}
	var out []int
	for _, v := range strings.Split(fds, ",") {
		if fd, err := strconv.Atoi(v); err == nil {
			out = append(out, fd)
		}
	}
	return out
}

// closeLanes closes the descriptors of lanes (1-based; none: all) at once,
// as the kernel does for a killed process a moment before its exit shows
// (§8.4). A closed descriptor, not a closed os.File: a lane's reader stays
// where it is, as it would in a dying process.
func closeLanes(lanes ...int) {
	fds := laneFDs()
	for i, fd := range fds {
		if len(lanes) == 0 || slices.Contains(lanes, i/2+1) {
			syscall.Close(fd)
		}
	}
	fmt.Fprintf(os.Stderr, "child: closed lanes %v\n", lanes)
}

func childLane(pair string) [2]*os.File {
	var in, out int
	if _, err := fmt.Sscanf(pair, "%d,%d", &in, &out); err != nil {
		fmt.Fprintf(os.Stderr, "child: bad lane descriptors %q\n", pair)
		os.Exit(2)
	}
	return [2]*os.File{os.NewFile(uintptr(in), "request"), os.NewFile(uintptr(out), "response")}
}

type laneChild struct {
	stated string
	prefer string // AFTERBURN_TEST_PREFER
	k      int    // the lanes it was given or offered

	mu      sync.Mutex
	cancels map[string]chan struct{} // by exchange token, while in flight
}

// readCancels fires the cancellation of the exchange each "cancel TOKEN"
// line names, if it is in flight.
func (c *laneChild) readCancels(f *os.File) {
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if tok, ok := strings.CutPrefix(sc.Text(), "cancel "); ok {
			c.fire(tok)
		}
	}
}

// fire cancels the exchange whose token is tok, if it is still in flight:
// from the cancel pipe, or the child's own deadline (§5.2).
func (c *laneChild) fire(tok string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if ch, ok := c.cancels[tok]; ok {
		close(ch)
		delete(c.cancels, tok)
		fmt.Fprintf(os.Stderr, "child: cancelled %s\n", tok)
	}
}

func (c *laneChild) serve(n int, in, out *os.File) {
	defer in.Close()
	defer out.Close()
	br := bufio.NewReader(in)
	for {
		req, err := http.ReadRequest(br)
		if err != nil {
			if err != io.EOF {
				fmt.Fprintf(os.Stderr, "child: lane %d: bad request: %v\n", n, err)
			}
			return
		}
		tok := req.Header.Get("AfterBurn-Exchange")
		if req.Header.Get("AfterBurn-Handshake") != "" {
			reply := "HTTP/1.1 200 OK\r\nAfterBurn-Protocol: 1\r\n"
			if c.stated != "none" {
				reply += "AfterBurn-Capabilities: exchange, streams\r\nAfterBurn-Streams: " + c.stated + "\r\n"
				if c.prefer != "" {
					reply += "AfterBurn-Streams-Preferred: " + c.prefer + "\r\n"
				}
			} else {
				reply += "AfterBurn-Capabilities: exchange\r\n"
			}
			if tok != "" {
				reply += "AfterBurn-Exchange: " + tok + "\r\n"
			}
			io.WriteString(out, reply+"Content-Length: 0\r\n\r\n")
			continue
		}
		cancelled := make(chan struct{})
		c.mu.Lock()
		c.cancels[tok] = cancelled
		c.mu.Unlock()
		own := time.AfterFunc(time.Duration(1<<63-1), func() { c.fire(tok) })
		if ms, err := strconv.Atoi(req.Header.Get("AfterBurn-Timeout-Ms")); err == nil {
			// PROTOCOL.md §5.2: the library's own cancellation, 50 ms after
			// the deadline, on one lane as on several.
			own.Reset(time.Duration(ms+50) * time.Millisecond)
		}
		body, keep := c.route(n, req, cancelled, in, out)
		own.Stop()
		c.mu.Lock()
		delete(c.cancels, tok)
		c.mu.Unlock()
		if !keep {
			return
		}
		io.Copy(io.Discard, req.Body)
		if body == written {
			continue
		}
		head := fmt.Sprintf("HTTP/1.1 200 OK\r\nAfterBurn-Exchange: %s\r\nContent-Length: %d\r\n\r\n", tok, len(body))
		io.WriteString(out, head)
		io.WriteString(out, body)
		if req.URL.Path == "/exit-after" {
			os.Exit(13) // a worker that exits right after a complete response (§9.3)
		}
	}
}

// written is what route returns for a response it wrote itself.
const written = "\x00written"

// route answers one request; keep is false when the lane ends with it.
func (c *laneChild) route(n int, req *http.Request, cancelled <-chan struct{}, in, out *os.File) (body string, keep bool) {
	q := req.URL.Query()
	ms, _ := strconv.Atoi(q.Get("ms"))
	switch req.URL.Path {
	case "/sleep": // cooperative: returns early when cancelled
		if q.Get("close") == "others" { // the other lanes end while this one is busy
			var others []int
			for i := 1; i <= len(laneFDs())/2; i++ {
				if i != n {
					others = append(others, i)
				}
			}
			closeLanes(others...)
		}
		fmt.Fprintf(os.Stderr, "child: lane %d sleeping\n", n)
		select {
		case <-time.After(time.Duration(ms) * time.Millisecond):
			return fmt.Sprintf("slept lane %d pid %d", n, os.Getpid()), true
		case <-cancelled:
			return "cancelled", true
		}
	case "/ignore": // a handler that ignores its cancellation
		time.Sleep(time.Duration(ms) * time.Millisecond)
		return "ignored", true
	case "/begin": // a response begun, then finished only once cancelled
		io.WriteString(out, "HTTP/1.1 200 OK\r\nAfterBurn-Exchange: "+req.Header.Get("AfterBurn-Exchange")+
			"\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nbegun\r\n")
		<-cancelled
		io.WriteString(out, "0\r\n\r\n")
		return written, true
	case "/crash":
		os.Exit(3)
	case "/close-all": // every lane's pipes closed, the exit not yet seen
		closeLanes()
		select {} // until the test kills it
	case "/close-lane": // user code closing its lane's pipes
		in.Close()
		out.Close()
		return "", false
	case "/given": // the lanes this process was given or offered (K, §2.5)
		return fmt.Sprintf("k %d pid %d", c.k, os.Getpid()), true
	case "/big": // a response larger than the pipe, written as the client reads
		size, _ := strconv.Atoi(q.Get("size"))
		return strings.Repeat("x", size), true
	}
	return fmt.Sprintf("lane %d pid %d", n, os.Getpid()), true
}
