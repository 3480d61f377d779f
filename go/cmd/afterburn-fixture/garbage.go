package main

import (
	"log"
	"net/http"
	"os"
	"os/exec"
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

// stale is what a late writer puts on the response pipe: a complete response without
// AfterBurn-Exchange, which a watchdog checking tokens must never deliver (PROTOCOL.md
// §4.6). The child's printf format below spells the same bytes.
const (
	stale       = "HTTP/1.1 200 OK\r\nContent-Length: 7\r\n\r\n\"stale\""
	staleFormat = `HTTP/1.1 200 OK\r\nContent-Length: 7\r\n\r\n"stale"`
)

// lateWriter arranges for stale to be written to the response pipe directly, in one
// write, ms milliseconds after the handler of r returned, while the handler answers
// through the library as usual (the contract's /garbage?when=late and when=child).
func lateWriter(r *http.Request, when string, ms int) {
	fd, ok := responseFD()
	if !ok {
		log.Printf("/garbage?when=%s: the response pipe was not found", when)
		return
	}
	if when == "late" {
		// The library cancels the request's context when the handler returns.
		done := r.Context().Done()
		go func() {
			<-done
			time.Sleep(time.Duration(ms) * time.Millisecond)
			syscall.Write(fd, []byte(stale))
		}()
		return
	}
	// A process the handler forked that answers as well. It reaches the response pipe
	// through /proc, since the library's descriptors are close-on-exec; its stdin,
	// stdout and stderr are /dev/null, so it never holds the worker's log pipes, and
	// it is in the worker's process group, so it dies with a killed worker.
	secs := strconv.FormatFloat(float64(ms)/1000, 'f', -1, 64)
	cmd := exec.Command("/bin/sh", "-c", "sleep "+secs+"; printf '"+staleFormat+"' > /proc/"+
		strconv.Itoa(os.Getpid())+"/fd/"+strconv.Itoa(fd))
	if err := cmd.Start(); err != nil {
		log.Printf("/garbage?when=child: %v", err)
		return
	}
	go cmd.Wait() // reaped when it exits; not waited for by the handler
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
