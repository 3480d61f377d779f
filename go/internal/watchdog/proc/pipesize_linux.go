package proc

import (
	"os"

	"golang.org/x/sys/unix"
)

// ProtocolPipeSize is the capacity asked for the request and response pipes:
// the default 64 KiB makes a large body cross in many small wake-ups of
// the watchdog and the worker; 1 MiB is Linux's default pipe-max-size.
const ProtocolPipeSize = 1 << 20

// GrowPipe enlarges a pipe's buffer; failure is harmless (the default stays).
func GrowPipe(f *os.File) {
	if rc, err := f.SyscallConn(); err == nil {
		rc.Control(func(fd uintptr) { unix.FcntlInt(fd, unix.F_SETPIPE_SZ, ProtocolPipeSize) })
	}
}
