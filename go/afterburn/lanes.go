package afterburn

import (
	"errors"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
)

// Lanes (PROTOCOL.md §2.5): a watchdog started with -lanes K gives the worker K pairs
// of protocol pipes, and the library serves each pair as an AfterBurn/1 stream of its
// own, with the core of conn.go, in a goroutine of its own. A lane blocked on a slow
// handler or a full response pipe blocks that goroutine only. Go's runtime cannot be
// forked (§2.6), so lanes are how a Go worker carries several requests at once.

// defaultMaxLanes is what a worker announces in AfterBurn-Streams unless MaxLanes
// says otherwise. An idle lane costs a goroutine parked in the runtime's poller (the
// pipes are made non-blocking, fd_unix.go: no OS thread per lane) and its buffers,
// about 150 KiB. How many lanes to use is the watchdog's -lanes; this
// default leaves the choice to it.
const defaultMaxLanes = 1024

// An Option changes how Serve serves.
type Option func(*options)

type options struct {
	maxLanes int
}

// MaxLanes sets the most lanes (PROTOCOL.md §2.5) Serve serves at once: the most
// requests one worker process carries concurrently. The worker announces it to the
// watchdog in its handshake, and serves min(n, the watchdog's -lanes) lanes; it
// closes the pipes of the others itself. The default is 1024. MaxLanes(1) serves
// one request at a time, as a worker without lanes does. Serve returns an error for
// n < 1.
func MaxLanes(n int) Option {
	return func(o *options) { o.maxLanes = n }
}

// lane is one pair of protocol pipes.
type lane struct {
	in, out *os.File
}

// laneEnv is what AFTERBURN_STREAM_FDS and AFTERBURN_STREAM_CANCEL_FD say.
type laneEnv struct {
	pairs  [][2]int // request and response descriptors of lanes 2 to K
	cancel int      // the cancel pipe's read end; -1 without
}

// laneEnvFrom reads the lane variables (PROTOCOL.md §2.5). Absent variables mean one
// lane and no cancel pipe: exactly the worker of before lanes. A malformed value is
// an error, not a guess, as for AFTERBURN_FDS (§2.3). Descriptors 0 to 2 are refused:
// lanes need fd mode, and stdin, stdout and stderr are never a lane.
func laneEnvFrom(lookup func(string) (string, bool)) (laneEnv, error) {
	le := laneEnv{cancel: -1}
	if v, ok := lookup("AFTERBURN_STREAM_FDS"); ok {
		parts := strings.Split(v, ",")
		if len(parts)%2 != 0 {
			return le, envError("AFTERBURN_STREAM_FDS", v, `request and response descriptors of each lane after the first, like "5,6,7,8"`)
		}
		fds := make([]int, len(parts))
		for i, p := range parts {
			fd, ok := parseDescriptor(p)
			if !ok {
				return le, envError("AFTERBURN_STREAM_FDS", v, `request and response descriptors of each lane after the first, like "5,6,7,8"`)
			}
			fds[i] = fd
		}
		for i := 0; i < len(fds); i += 2 {
			le.pairs = append(le.pairs, [2]int{fds[i], fds[i+1]})
		}
	}
	if v, ok := lookup("AFTERBURN_STREAM_CANCEL_FD"); ok {
		fd, ok := parseDescriptor(v)
		if !ok {
			return le, envError("AFTERBURN_STREAM_CANCEL_FD", v, `one descriptor, like "9"`)
		}
		le.cancel = fd
	}
	return le, nil
}

// parseDescriptor parses one decimal descriptor above 2.
func parseDescriptor(s string) (int, bool) {
	n, ok := parseDigits([]byte(s))
	if !ok || n < 3 || n > 1<<30 {
		return 0, false
	}
	return int(n), true
}

// openLanes returns lanes 1 to L = min(K, maxLanes), lane 1 being the descriptors in
// and out, and the cancel pipe, or nil; on error every lane's descriptors, in and out
// included, are closed. It closes the descriptors of lanes L+1 to K first: the
// watchdog sees EOF on their response pipes and serves L lanes (PROTOCOL.md §2.5).
//
// Several lanes are served on the runtime's poller, so that a lane waiting for its next
// request is a parked goroutine and no OS thread (fd_unix.go). A lane that is alone
// keeps blocking descriptors: it is the process's one reader, so a thread blocked in its
// read(2) is the thread that would otherwise sleep in the poller, and one read(2) that
// sleeps until the request comes replaces the poller's round (a read that fails with
// EAGAIN, two epoll_pwait, and waking a spinning thread): at c=8 under the watchdog,
// 2.08 system calls and 1.07 context switches per request against the poller's 5.7–6.0
// and 1.6–1.8, where the C child makes 2.00 and 1.00 (issue 30).
func openLanes(in, out int, le laneEnv, maxLanes int) ([]lane, *os.File, error) {
	keep := min(len(le.pairs), maxLanes-1)
	for _, p := range le.pairs[keep:] {
		os.NewFile(uintptr(p[0]), "").Close()
		os.NewFile(uintptr(p[1]), "").Close()
	}
	lin, lout := laneFiles(in, out, keep > 0)
	lanes := []lane{{lin, lout}}
	var cancelPipe *os.File
	closeAll := func() { // lane 1 too: the caller's descriptors are files now
		for _, l := range lanes {
			l.in.Close()
			l.out.Close()
		}
	}
	for i, p := range le.pairs[:keep] {
		name := "afterburn-lane-" + strconv.Itoa(i+2)
		lin, err := openFD("AFTERBURN_STREAM_FDS", p[0], name+"-requests")
		if err != nil {
			closeAll()
			return nil, nil, err
		}
		lout, err := openFD("AFTERBURN_STREAM_FDS", p[1], name+"-responses")
		if err != nil {
			lin.Close()
			closeAll()
			return nil, nil, err
		}
		lanes = append(lanes, lane{lin, lout})
	}
	if le.cancel >= 0 {
		var err error
		if cancelPipe, err = openFD("AFTERBURN_STREAM_CANCEL_FD", le.cancel, "afterburn-cancel"); err != nil {
			closeAll()
			return nil, nil, err
		}
	}
	return lanes, cancelPipe, nil
}

// serveLanes serves every lane until each has ended, and closes each lane's pipes
// when it ends. It returns nil when every lane ended cleanly, at EOF between requests
// (PROTOCOL.md §9.4), and otherwise what made lanes stop. A fault on one lane (§8.8,
// §8.3 after the head) ends that lane alone; the others serve on (§2.5). A failed
// handshake (§3.4) returns at once: the worker must exit.
func serveLanes(h http.Handler, lanes []lane, cancelPipe *os.File, lim limits, maxLanes int, log io.Writer) error {
	var f *inflight
	if cancelPipe != nil {
		f = newInflight()
		go readCancels(cancelPipe, f)
		defer cancelPipe.Close()
	}
	handshake := handshakeFields(maxLanes)
	serveLane := func(l lane) error {
		defer l.in.Close()
		defer l.out.Close()
		c := newConn(l.in, l.out, lim)
		defer c.closePolled()
		c.log = log
		c.handshake = handshake
		c.inflight = f
		c.blocking = len(lanes) == 1 && !onPoller(l.in)
		return c.serve(h)
	}
	if len(lanes) == 1 {
		return serveLane(lanes[0]) // no goroutine: the worker of before lanes
	}
	ended := make(chan error, len(lanes))
	for _, l := range lanes {
		go func() { ended <- serveLane(l) }()
	}
	var errs []error
	for range lanes {
		err := <-ended
		var perr *protocolError
		if errors.As(err, &perr) && perr.typ == typeVersionMismatch {
			return err
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
