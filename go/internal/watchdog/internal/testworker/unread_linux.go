package testworker

import (
	"os"

	"golang.org/x/sys/unix"
)

// unreadBytes is how many bytes wait unread in the child's request pipe.
func unreadBytes(in *os.File) int {
	n, err := unix.IoctlGetInt(int(in.Fd()), unix.TIOCINQ)
	if err != nil {
		return -1
	}
	return n
}
