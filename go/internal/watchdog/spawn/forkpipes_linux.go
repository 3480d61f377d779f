package spawn

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// forkPipes are a forked worker's four pipes (PROTOCOL.md §2.6): the
// watchdog's ends as files, the worker's as bare descriptors, which only
// cross the control socket and are closed once sent. os.Pipe would make
// every end non-blocking and register it with the poller, then undo it at
// its close: four system calls for each of the three ends the watchdog
// never uses, on every fork.
type forkPipes struct {
	reqW, respR, outR, errR *os.File // through the poller: non-blocking
	reqR                    *os.File // kept to count unread bytes (§9.3); never read here
	theirs                  [4]int   // request read end, response, stdout and stderr write ends
}

func newForkPipes() (*forkPipes, error) {
	var fds [4][2]int
	for i := range fds {
		if err := unix.Pipe2(fds[i][:], unix.O_CLOEXEC); err != nil {
			for _, p := range fds[:i] {
				unix.Close(p[0])
				unix.Close(p[1])
			}
			return nil, fmt.Errorf("watchdog: pipe: %v", err)
		}
	}
	for _, fd := range []int{fds[0][1], fds[1][0], fds[2][0], fds[3][0]} {
		unix.SetNonblock(fd, true) // os.NewFile then puts it in the poller
	}
	return &forkPipes{
		reqW:   os.NewFile(uintptr(fds[0][1]), "|1"),
		reqR:   os.NewFile(uintptr(fds[0][0]), "|0"),
		respR:  os.NewFile(uintptr(fds[1][0]), "|0"),
		outR:   os.NewFile(uintptr(fds[2][0]), "|0"),
		errR:   os.NewFile(uintptr(fds[3][0]), "|0"),
		theirs: [4]int{fds[0][0], fds[1][1], fds[2][1], fds[3][1]},
	}, nil
}

// closeTheirs closes the worker's ends the watchdog holds alone (the request
// read end is reqR's too, and stays).
func (p *forkPipes) closeTheirs() {
	for _, fd := range p.theirs[1:] {
		unix.Close(fd)
	}
}
