package main

import (
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// garbage writes to the response pipe directly, bypassing the library, as the
// contract's /garbage route asks, then blocks forever (the watchdog must notice,
// PROTOCOL.md §8.5, §9.6).
func garbage(when string) {
	msg := "NOT HTTP AT ALL\r\n\r\n"
	if when == "after" {
		msg = "HTTP/1.1 200 OK\r\nContent-Length: 12\r\n\r\n{\"ok\": true}NOT HTTP AT ALL\r\n"
	}
	if fd, ok := responseFD(); ok {
		syscall.Write(fd, []byte(msg)) // one write
	}
	for {
		time.Sleep(time.Hour) // a bare select{} would be reported as a deadlock
	}
}

// responseFD finds the response pipe. In fd mode it is the second descriptor of
// AFTERBURN_FDS. In stdio mode the library has moved it off fd 1 to a private
// descriptor it does not export, so look for it: the write-only pipe above fd 2 that is
// not stderr's (Linux /proc only).
func responseFD() (int, bool) {
	out := 1
	if v, ok := os.LookupEnv("AFTERBURN_FDS"); ok {
		_, b, _ := strings.Cut(v, ",")
		n, err := strconv.Atoi(b)
		if err != nil {
			return 0, false
		}
		out = n
	}
	if out > 1 {
		return out, true
	}
	var stderr syscall.Stat_t
	if syscall.Fstat(2, &stderr) != nil {
		return 0, false
	}
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return 0, false
	}
	for _, e := range entries {
		fd, err := strconv.Atoi(e.Name())
		if err != nil || fd <= 2 {
			continue
		}
		var st syscall.Stat_t
		if syscall.Fstat(fd, &st) != nil || st.Mode&syscall.S_IFMT != syscall.S_IFIFO ||
			st.Dev == stderr.Dev && st.Ino == stderr.Ino {
			continue
		}
		flags, _, errno := syscall.Syscall(syscall.SYS_FCNTL, uintptr(fd), syscall.F_GETFL, 0)
		if errno == 0 && flags&syscall.O_ACCMODE == syscall.O_WRONLY {
			return fd, true
		}
	}
	return 0, false
}
