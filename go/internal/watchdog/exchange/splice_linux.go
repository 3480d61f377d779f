package exchange

import (
	"io"
	"os"
	"syscall"

	"github.com/afterburn-dev/afterburn/go/internal/watchdog/proc"
	"golang.org/x/sys/unix"
)

// splicePipe is a pipe of the watchdog's own through which splice(2) moves
// bytes from one descriptor to another without copying them through user
// space (hijack.go). It is how internal/poll splices between sockets, and for
// the same reason: the pipe is empty whenever bytes are taken from src, so
// an EAGAIN there means src has nothing yet, and every byte in it is ours,
// so an EAGAIN giving them to dst means dst is full. Each call runs in the
// RawConn callback of the descriptor it then waits on, which is what Go's
// edge-triggered poller needs to never miss a wake-up, and each side's error
// is told apart. A splice between the two descriptors directly could not
// tell "src empty" from "dst full".
type splicePipe struct{ r, w int }

func newSplicePipe() (*splicePipe, error) {
	var fds [2]int
	if err := unix.Pipe2(fds[:], unix.O_CLOEXEC|unix.O_NONBLOCK); err != nil {
		return nil, os.NewSyscallError("pipe2", err)
	}
	// As large as one step; a smaller pipe (the call fails) only costs more
	// calls.
	unix.FcntlInt(uintptr(fds[1]), unix.F_SETPIPE_SZ, proc.ProtocolPipeSize)
	return &splicePipe{r: fds[0], w: fds[1]}, nil
}

func (p *splicePipe) Close() {
	unix.Close(p.r)
	unix.Close(p.w)
}

// move moves n bytes from src to dst, a step of at most the pipe's size at a
// time, within the deadlines set on either. read counts the bytes taken
// from src and written those given to dst; they differ by what was in the
// pipe when dst failed, which is then lost: a pipe is used for one move. rerr
// is src's error, io.ErrUnexpectedEOF when src ended first, and werr dst's.
func (p *splicePipe) move(dst, src syscall.RawConn, n int64) (read, written int64, rerr, werr error) {
	for read < n {
		var k int
		var err error
		rerr = src.Read(func(fd uintptr) bool {
			k, err = splice(int(fd), p.w, int(min(n-read, proc.ProtocolPipeSize)))
			return err != unix.EAGAIN
		})
		if rerr == nil && err != nil {
			rerr = os.NewSyscallError("splice", err)
		}
		if rerr == nil && k == 0 {
			rerr = io.ErrUnexpectedEOF
		}
		if rerr != nil {
			return
		}
		read += int64(k)
		for k > 0 {
			var m int
			werr = dst.Write(func(fd uintptr) bool {
				m, err = splice(p.r, int(fd), k)
				return err != unix.EAGAIN
			})
			if werr == nil && err != nil {
				werr = os.NewSyscallError("splice", err)
			}
			if werr != nil {
				return
			}
			written += int64(m)
			k -= m
		}
	}
	return
}

// splice is splice(2) without offsets, retried when interrupted; both
// descriptors are non-blocking.
func splice(in, out, n int) (int, error) {
	for {
		k, err := unix.Splice(in, nil, out, nil, n, unix.SPLICE_F_NONBLOCK)
		if err != unix.EINTR {
			return int(k), err
		}
	}
}
