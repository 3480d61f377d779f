//go:build unix

package afterburn

import (
	"errors"
	"os"
	"strconv"
	"syscall"
	"time"
)

// openFDs readies the protocol descriptors by number (PROTOCOL.md §2.4) and returns
// the descriptors to serve; laneFiles makes files of them once the lanes are known.
// They are marked
// close-on-exec, so processes the handler starts cannot hold the pipes open. When
// the protocol is on fd 0 or fd 1 it is first moved to private descriptors and fd 0
// becomes /dev/null and fd 1 a duplicate of fd 2, so that whatever writes to fd 1
// afterwards — fmt.Println, os.Stdout, C's printf — lands on stderr, and reads of
// stdin see EOF instead of request bytes.
func openFDs(in, out int) (int, int, error) {
	for _, fd := range []int{in, out} {
		var st syscall.Stat_t
		if err := syscall.Fstat(fd, &st); err != nil {
			return -1, -1, &envErr{"afterburn: AFTERBURN_FDS names descriptor " + strconv.Itoa(fd) + ", which is not open: " + err.Error()}
		}
	}
	if in <= 1 || out <= 1 {
		var err error
		if in, out, err = moveOffStdio(in, out); err != nil {
			return -1, -1, err
		}
	} else {
		syscall.CloseOnExec(in)
		syscall.CloseOnExec(out)
	}
	return in, out, nil
}

// laneFiles makes the files of lane 1: on the poller when other lanes share the
// process (pollable), blocking when it is alone (openLanes says why).
func laneFiles(in, out int, shared bool) (*os.File, *os.File) {
	if shared {
		return pollable(in, "afterburn-requests"), pollable(out, "afterburn-responses")
	}
	return blocking(in, "afterburn-requests"), blocking(out, "afterburn-responses")
}

// blocking wraps fd in an *os.File whose reads and writes are plain read(2) and
// write(2) calls that wait in the kernel, outside the runtime's poller. The watchdog
// hands blocking pipes, but a descriptor left non-blocking is made blocking, so that a
// read never fails with EAGAIN.
func blocking(fd int, name string) *os.File {
	syscall.SetNonblock(fd, false)
	return os.NewFile(uintptr(fd), name)
}

// pollable wraps fd in an *os.File served by the runtime's poller: the pipes of a
// worker with several lanes (a lone lane blocks, openLanes). os.NewFile puts a
// descriptor on the poller only when it is already non-blocking, and a watchdog hands
// blocking pipes (os/exec makes inherited descriptors blocking). A read of a blocking
// pipe holds an OS thread for as long as it waits: one thread per idle lane (§2.5). On
// the poller a lane that waits is a parked goroutine and nothing more. (The processor
// handoffs once blamed on blocking reads, RESEARCH.md §7, were the runtime's monitor
// taking a processor that had not been through the scheduler for 10 ms; a lone lane
// avoids them with passScheduler and spareProcessor.) os.File's Read and Write wait on the
// poller where the descriptor would block, and Write loops until every byte is written,
// so callers see the same whole writes and EOF as with blocking descriptors.
//
// The file description is the worker's own end of its pipe (the watchdog's end is
// another), so O_NONBLOCK changes nothing the watchdog sees. A descriptor the poller
// does not take (a regular file, as a test may pass) goes back to blocking mode.
func pollable(fd int, name string) *os.File {
	if syscall.SetNonblock(fd, true) != nil {
		return os.NewFile(uintptr(fd), name)
	}
	f := os.NewFile(uintptr(fd), name)
	if errors.Is(f.SetReadDeadline(time.Time{}), os.ErrNoDeadline) { // not on the poller
		syscall.SetNonblock(fd, false)
	}
	return f
}

// onPoller reports whether f's reads wait in the runtime's poller.
func onPoller(f *os.File) bool {
	return !errors.Is(f.SetReadDeadline(time.Time{}), os.ErrNoDeadline)
}

func moveOffStdio(in, out int) (int, int, error) {
	// Hold ForkLock so that no process started meanwhile inherits a descriptor before
	// it is marked close-on-exec.
	syscall.ForkLock.Lock()
	defer syscall.ForkLock.Unlock()
	newIn, err := dupPrivate(in)
	if err != nil {
		return 0, 0, err
	}
	newOut := newIn
	if out != in {
		if newOut, err = dupPrivate(out); err != nil {
			return 0, 0, err
		}
	}
	if in == 0 || out == 0 {
		null, err := syscall.Open(os.DevNull, syscall.O_RDWR, 0)
		if err != nil {
			return 0, 0, &envErr{"afterburn: opening " + os.DevNull + ": " + err.Error()}
		}
		err = dup2(null, 0)
		syscall.Close(null)
		if err != nil {
			return 0, 0, &envErr{"afterburn: moving stdin off the request pipe: " + err.Error()}
		}
	}
	if in == 1 || out == 1 {
		if err := dup2(2, 1); err != nil {
			return 0, 0, &envErr{"afterburn: pointing stdout at stderr: " + err.Error()}
		}
	}
	return newIn, newOut, nil
}

// dupPrivate duplicates fd onto a close-on-exec descriptor above 2.
func dupPrivate(fd int) (int, error) {
	var spare []int
	defer func() {
		for _, s := range spare {
			syscall.Close(s)
		}
	}()
	for {
		nfd, err := syscall.Dup(fd)
		if err != nil {
			return 0, &envErr{"afterburn: duplicating descriptor " + strconv.Itoa(fd) + ": " + err.Error()}
		}
		if nfd > 2 { // a closed stderr would otherwise hand out fd 2
			syscall.CloseOnExec(nfd)
			return nfd, nil
		}
		spare = append(spare, nfd)
	}
}

// openFD opens one more protocol descriptor by number, named by the variable env:
// the pipes of lanes 2 to K and the cancel pipe (PROTOCOL.md §2.5), close-on-exec as
// above.
func openFD(env string, fd int, name string) (*os.File, error) {
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		return nil, &envErr{"afterburn: " + env + " names descriptor " + strconv.Itoa(fd) + ", which is not open: " + err.Error()}
	}
	syscall.CloseOnExec(fd)
	return pollable(fd, name), nil
}

// checkUnusedLaneFD reports whether fd, named by the variable env as an end of a lane
// the worker does not serve (PROTOCOL.md §2.5), is what a watchdog passes there: a pipe
// (or a socket) open the lane's way, for writing when write (a response pipe), for
// reading otherwise. The library closes those descriptors. One that is not such an end
// is an error and is not closed: the environment does not describe this process's
// descriptors (something between the watchdog and the worker did not pass the lanes
// on), and what holds that number now, a file or a connection the function opened
// before Serve, is not the library's to close.
func checkUnusedLaneFD(env string, fd int, write bool) error {
	named := "afterburn: " + env + " names descriptor " + strconv.Itoa(fd)
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		return &envErr{named + ", which is not open: " + err.Error()}
	}
	if kind := st.Mode & syscall.S_IFMT; kind != syscall.S_IFIFO && kind != syscall.S_IFSOCK {
		return &envErr{named + ", which is not a pipe"}
	}
	flags, _, errno := syscall.Syscall(syscall.SYS_FCNTL, uintptr(fd), syscall.F_GETFL, 0)
	if errno != 0 {
		return &envErr{named + ": fcntl: " + errno.Error()}
	}
	switch mode := flags & syscall.O_ACCMODE; {
	case write && mode == syscall.O_RDONLY:
		return &envErr{named + " as a response pipe, but it is a pipe's read end"}
	case !write && mode == syscall.O_WRONLY:
		return &envErr{named + " as a pipe to read, but it is a pipe's write end"}
	}
	return nil
}
