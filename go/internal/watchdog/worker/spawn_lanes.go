package worker

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// ExtraLanes are the pipes of lanes 2 to K and the cancel pipe of a worker
// about to be started (PROTOCOL.md §2.5): the child's ends, in fd order from
// the first free descriptor, the watchdog's ends, and the variables naming
// them.
type ExtraLanes struct {
	Files  []*os.File // the child's: request read end, response write end per lane, then the cancel read end
	Child  []*os.File // those of files the watchdog closes once the child started
	Parent []*os.File // every end the watchdog keeps, to close should the start fail
	lanes  [][3]*os.File
	cancel *os.File // the cancel pipe's write end
	offer  bool     // lanes=auto's offer (§2.5)
	Env    []string
}

// MakeLanes makes n lanes' pipes and the cancel pipe for a child whose next
// free descriptor is fd. Unlike lane 1's, these pipes keep the kernel's
// default size: 32 lanes of 1 MiB pipes would use up a user's default pipe
// memory (§2.5, /proc/sys/fs/pipe-user-pages-soft). An offer (lanes=auto)
// names them in AFTERBURN_STREAM_OFFER_FDS and
// AFTERBURN_STREAM_OFFER_CANCEL_FD instead, which only a library that
// states a preference reads: any other sees one lane, exactly as with
// lanes=1 (§2.5).
func MakeLanes(n, fd int, offer bool) (*ExtraLanes, error) {
	e := &ExtraLanes{offer: offer}
	fail := func(err error) (*ExtraLanes, error) {
		for _, f := range append(e.Parent, e.Child...) { // files is parent's reqR plus child
			f.Close()
		}
		return nil, fmt.Errorf("watchdog: lane pipe: %v", err)
	}
	fds := make([]string, 0, 2*n)
	for i := 0; i < n; i++ {
		reqR, reqW, err := os.Pipe()
		if err != nil {
			return fail(err)
		}
		respR, respW, err := os.Pipe()
		if err != nil {
			reqR.Close()
			reqW.Close()
			return fail(err)
		}
		// reqR is also kept: lane.unreadRequestBytes (§9.3).
		e.Parent = append(e.Parent, reqW, reqR, respR)
		e.Child = append(e.Child, respW)
		e.Files = append(e.Files, reqR, respW)
		e.lanes = append(e.lanes, [3]*os.File{reqW, reqR, respR})
		fds = append(fds, strconv.Itoa(fd), strconv.Itoa(fd+1))
		fd += 2
	}
	cancelR, cancelW, err := os.Pipe()
	if err != nil {
		return fail(err)
	}
	e.Parent = append(e.Parent, cancelW)
	e.Child = append(e.Child, cancelR)
	e.Files = append(e.Files, cancelR)
	e.cancel = cancelW
	prefix := "AFTERBURN_STREAM_"
	if offer {
		prefix = "AFTERBURN_STREAM_OFFER_"
	}
	e.Env = []string{
		prefix + "FDS=" + strings.Join(fds, ","),
		prefix + "CANCEL_FD=" + strconv.Itoa(fd),
	}
	return e, nil
}

// Give hands the watchdog's ends to w, whose lane 1 it already has. A nil e
// gives nothing: one lane. The request pipes' read ends stay open in the
// watchdog after the child's copies are closed (§9.3), so they are not
// closed with the child's ends.
func (e *ExtraLanes) Give(w *Worker) {
	if e == nil {
		return
	}
	for _, l := range e.lanes {
		w.addLane(l[0], l[1], l[2])
	}
	w.cancelW = e.cancel
	w.Offered = e.offer
}
