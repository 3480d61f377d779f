package afterburn

import (
	"errors"
	"io"
	"net/http"
	"os"
	"strconv"
)

// Lanes (PROTOCOL.md §2.5): a watchdog started with -lanes K gives the worker K pairs
// of protocol pipes, and the library serves each pair as an AfterBurn/1 stream of its
// own, with the core of conn.go, in a goroutine of its own. A lane blocked on a slow
// handler or a full response pipe blocks that goroutine only. Go's runtime cannot be
// forked (§2.6), so lanes are how a Go worker carries several requests at once.
//
// Under the watchdog's default, lanes=auto, the lanes are an offer (§2.5 "Offered
// lanes"): the worker says in its handshake how many it prefers, serves that many, and
// closes the pipes of the others.

// defaultMaxLanes is what a worker announces in AfterBurn-Streams unless MaxLanes
// says otherwise. An idle lane costs a goroutine parked in the runtime's poller (the
// pipes are made non-blocking, fd_unix.go: no OS thread per lane) and its buffers,
// about 150 KiB. How many lanes to use is the watchdog's -lanes; this
// default leaves the choice to it.
const defaultMaxLanes = 1024

// defaultPreferredLanes is what a worker answers to an offer of lanes unless
// PreferredLanes or preferredLanesEnv says otherwise: one lane, one request at a time,
// as before offers. Handlers are concurrent by net/http's convention, but whether more
// lanes serve a Go function better than more workers has not been measured (issue 30);
// until it is, lanes are the operator's or the function's choice.
const defaultPreferredLanes = 1

// preferredLanesEnv sets the lanes preferred when offered without rebuilding the
// function; it wins over PreferredLanes, as AFTERBURN_NODE_PREFERRED_LANES does for the
// Node library.
const preferredLanesEnv = "AFTERBURN_GO_PREFERRED_LANES"

// An Option changes how Serve serves.
type Option func(*options)

type options struct {
	maxLanes       int
	preferredLanes int
}

// MaxLanes sets the most lanes (PROTOCOL.md §2.5) Serve serves at once: the most
// requests one worker process carries concurrently. The worker announces it to the
// watchdog in its handshake, and serves min(n, the watchdog's -lanes) lanes, or under
// lanes=auto min(n, the offer, PreferredLanes); it closes the pipes of the others
// itself. The default is 1024. MaxLanes(1) serves one request at a time, as a worker
// without lanes does. Serve returns an error for n < 1.
func MaxLanes(n int) Option {
	return func(o *options) { o.maxLanes = n }
}

// PreferredLanes sets how many lanes (PROTOCOL.md §2.5) the worker asks for when the
// watchdog offers them, which it does under its default, lanes=auto: the worker then
// serves min(n, MaxLanes, the offer) lanes, and the watchdog starts later workers with
// that many. The default is 1: one request at a time. When the operator sets the
// watchdog's -lanes to a number, that number is served (up to MaxLanes) and n plays no
// part. The environment variable AFTERBURN_GO_PREFERRED_LANES, when set, wins over n.
// Serve returns an error for n < 1.
func PreferredLanes(n int) Option {
	return func(o *options) { o.preferredLanes = n }
}

// lane is one pair of protocol pipes.
type lane struct {
	in, out *os.File
}

// unusedFD is a descriptor of a lane the worker does not serve, which it closes
// (§2.5): named by env, the write end of a response pipe when write, else the read end
// of a request pipe or of the cancel pipe.
type unusedFD struct {
	env   string
	fd    int
	write bool
}

// openLanes returns lanes 1 to inUse (L of PROTOCOL.md §2.5), lane 1 being the
// descriptors in and out, and the cancel pipe, or nil; on error every lane's
// descriptors, in and out included, are closed. It closes the descriptors of lanes
// inUse+1 to K first, before the handshake (L is known from the environment and the
// options alone): the watchdog sees EOF on their response pipes and serves inUse
// lanes, and no process the handler starts inherits them (§2.5). One lane of an offer
// is served exactly as with lanes=1 (§2.5 "Offered lanes"), so its cancel pipe, on
// which the watchdog writes nothing, is closed too. A descriptor to close that is not
// a pipe end open the lane's way is an error, and nothing is closed but in and out.
//
// Several lanes are served on the runtime's poller, so that a lane waiting for its next
// request is a parked goroutine and no OS thread (fd_unix.go). A lane that is alone
// keeps blocking descriptors: it is the process's one reader, so a thread blocked in its
// read(2) is the thread that would otherwise sleep in the poller, and one read(2) that
// sleeps until the request comes replaces the poller's round (a read that fails with
// EAGAIN, two epoll_pwait, and waking a spinning thread): at c=8 under the watchdog,
// 2.08 system calls and 1.07 context switches per request against the poller's 5.7–6.0
// and 1.6–1.8, where the C child makes 2.00 and 1.00 (issue 30).
func openLanes(in, out int, le laneEnv, inUse int) ([]lane, *os.File, error) {
	fdsVar, cancelVar := le.varNames()
	keep := min(len(le.pairs), inUse-1)
	unused := make([]unusedFD, 0, 2*(len(le.pairs)-keep)+1)
	for _, p := range le.pairs[keep:] {
		unused = append(unused, unusedFD{fdsVar, p[0], false}, unusedFD{fdsVar, p[1], true})
	}
	if le.offered && keep == 0 && le.cancel >= 0 {
		unused = append(unused, unusedFD{cancelVar, le.cancel, false})
		le.cancel = -1
	}
	// All are checked before any is closed: a descriptor that is not the watchdog's
	// stays open, and so do the others (checkUnusedLaneFD says why).
	for _, u := range unused {
		if err := checkUnusedLaneFD(u.env, u.fd, u.write); err != nil {
			os.NewFile(uintptr(in), "").Close()
			os.NewFile(uintptr(out), "").Close()
			return nil, nil, err
		}
	}
	for _, u := range unused {
		os.NewFile(uintptr(u.fd), "").Close()
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
		lin, err := openFD(fdsVar, p[0], name+"-requests")
		if err != nil {
			closeAll()
			return nil, nil, err
		}
		lout, err := openFD(fdsVar, p[1], name+"-responses")
		if err != nil {
			lin.Close()
			closeAll()
			return nil, nil, err
		}
		lanes = append(lanes, lane{lin, lout})
	}
	if le.cancel >= 0 {
		var err error
		if cancelPipe, err = openFD(cancelVar, le.cancel, "afterburn-cancel"); err != nil {
			closeAll()
			return nil, nil, err
		}
	}
	return lanes, cancelPipe, nil
}

// serveLanes serves every lane until each has ended, and closes each lane's pipes
// when it ends; handshake is the reply's fields (handshakeFields). It returns nil when
// every lane ended cleanly, at EOF between requests (PROTOCOL.md §9.4), and otherwise
// what made lanes stop. A fault on one lane (§8.8, §8.3 after the head) ends that lane
// alone; the others serve on (§2.5). A failed handshake (§3.4) returns at once: the
// worker must exit.
func serveLanes(h http.Handler, lanes []lane, cancelPipe *os.File, lim limits, handshake string, log io.Writer) error {
	var f *inflight
	if cancelPipe != nil {
		f = newInflight()
		go readCancels(cancelPipe, f)
		defer cancelPipe.Close()
	}
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
		if !onPoller(lanes[0].in) {
			defer spareProcessor(os.LookupEnv)()
		}
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
