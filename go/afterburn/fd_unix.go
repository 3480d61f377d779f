//go:build unix

package afterburn

import (
	"os"
	"strconv"
	"syscall"
)

// openFDs opens the protocol descriptors by number (PROTOCOL.md §2.4). They are marked
// close-on-exec, so processes the handler starts cannot hold the pipes open. When
// the protocol is on fd 0 or fd 1 it is first moved to private descriptors and fd 0
// becomes /dev/null and fd 1 a duplicate of fd 2, so that whatever writes to fd 1
// afterwards — fmt.Println, os.Stdout, C's printf — lands on stderr, and reads of
// stdin see EOF instead of request bytes.
func openFDs(in, out int) (*os.File, *os.File, error) {
	for _, fd := range []int{in, out} {
		var st syscall.Stat_t
		if err := syscall.Fstat(fd, &st); err != nil {
			return nil, nil, &envErr{"afterburn: AFTERBURN_FDS names descriptor " + strconv.Itoa(fd) + ", which is not open: " + err.Error()}
		}
	}
	if in <= 1 || out <= 1 {
		var err error
		if in, out, err = moveOffStdio(in, out); err != nil {
			return nil, nil, err
		}
	} else {
		syscall.CloseOnExec(in)
		syscall.CloseOnExec(out)
	}
	return os.NewFile(uintptr(in), "afterburn-requests"), os.NewFile(uintptr(out), "afterburn-responses"), nil
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
	return os.NewFile(uintptr(fd), name), nil
}
