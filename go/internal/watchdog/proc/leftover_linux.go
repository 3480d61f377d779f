package proc

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"

	"golang.org/x/sys/unix"
)

// leftProc is a process a request left behind (PROTOCOL.md §2.7).
type leftProc struct {
	Pid, pgrp int
	Comm      string
}

// LeftBehind lists the live children of the watchdog that belong to no
// worker: those in the process group of dead (the worker that just exited,
// whose children were re-parented to the watchdog, the child subreaper),
// and session leaders (a daemon after setsid). A process that only made a
// group of its own is not counted: so does a forked worker whose pid the
// watchdog has not registered yet (or never will, its fork abandoned at
// shutdown), and it must not be taken for what a request left.
func LeftBehind(dead int) []leftProc {
	var left []leftProc
	seen := map[int]bool{}
	for _, pid := range children() {
		if seen[pid] {
			continue
		}
		seen[pid] = true
		if lp, ok := leftover(pid, dead); ok {
			left = append(left, lp)
		}
	}
	return left
}

// children lists the watchdog's children. The kernel attaches an orphan to
// the first live thread of its subreaper (kernel/exit.c,
// find_alive_thread): the main thread, which in Go never exits; every
// thread's list is read only when the main thread's cannot be.
//
// The main thread's list is read once per exited worker under
// isolation=request, so its file stays open: a pread at offset 0 makes the
// kernel list the children afresh (seq_file restarts at 0), one system call
// where os.ReadFile made five or six. §2.7's look for leftovers costs that
// call whenever nothing was left (only known children), which is the usual
// case; a test of the worker's process group alone could not stand for it,
// since the group is not empty while its leader is a zombie, and a daemon
// after setsid is in no group of the worker's.
func children() []int {
	if pids, ok := mainChildren.read(); ok {
		return pids
	}
	if b, err := os.ReadFile("/proc/self/task/" + strconv.Itoa(os.Getpid()) + "/children"); err == nil {
		return parsePids(b)
	}
	tasks, _ := os.ReadDir("/proc/self/task")
	var pids []int
	for _, t := range tasks {
		if b, err := os.ReadFile(filepath.Join("/proc/self/task", t.Name(), "children")); err == nil {
			pids = append(pids, parsePids(b)...)
		}
	}
	return pids
}

// childrenFile is the main thread's children file, opened at its first read
// and kept: -1 when it could not be opened.
type childrenFile struct {
	once sync.Once
	fd   int
	size atomic.Int64 // a buffer that held the whole list last time
}

var mainChildren childrenFile

// read lists the main thread's children with one pread, more only when the
// list outgrew the buffer; false when the file cannot be read.
func (c *childrenFile) read() ([]int, bool) {
	c.once.Do(func() {
		fd, err := unix.Open("/proc/self/task/"+strconv.Itoa(os.Getpid())+"/children", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			fd = -1
		}
		c.fd = fd
		c.size.Store(4096)
	})
	if c.fd < 0 {
		return nil, false
	}
	for {
		buf := make([]byte, c.size.Load())
		n, err := unix.Pread(c.fd, buf, 0)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, false
		}
		if n < len(buf) {
			return parsePids(buf[:n]), true
		}
		c.size.Store(int64(2 * len(buf))) // perhaps cut: read it whole
	}
}

func parsePids(b []byte) []int {
	var pids []int
	for _, f := range bytes.Fields(b) {
		if pid, err := strconv.Atoi(string(f)); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids
}

// leftover reports whether the watchdog's child pid is a process left
// behind (leftBehind says which).
func leftover(pid, dead int) (leftProc, bool) {
	// A known pid first: the template, the watchdog's usual child under
	// isolation=request, costs no read of /proc.
	Procs.Mu.Lock()
	known := Procs.Pids[pid]
	Procs.Mu.Unlock()
	if known {
		return leftProc{}, false
	}
	st, ok := readStat(pid)
	if !ok || st.state == 'Z' {
		return leftProc{}, false // gone, or dead and waiting for the orphan reaper
	}
	if st.pgrp == dead || st.session == pid {
		return leftProc{Pid: pid, pgrp: st.pgrp, Comm: st.comm}, true
	}
	return leftProc{}, false
}

// procStat is what leftBehind reads of /proc/PID/stat.
type procStat struct {
	comm                string
	state               byte
	ppid, pgrp, session int
}

// ParentOf is pid's parent, 0 if pid is gone: a fork-child template's answer
// must name its own child (PROTOCOL.md §2.6).
func ParentOf(pid int) int {
	st, ok := readStat(pid)
	if !ok {
		return 0
	}
	return st.ppid
}

func readStat(pid int) (procStat, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procStat{}, false
	}
	// "pid (comm) state ppid pgrp session ...": comm may hold spaces and
	// parentheses, so it ends at the last ')'.
	open, end := bytes.IndexByte(b, '('), bytes.LastIndexByte(b, ')')
	if open < 0 || end < open {
		return procStat{}, false
	}
	f := bytes.Fields(b[end+1:])
	if len(f) < 4 || len(f[0]) != 1 {
		return procStat{}, false
	}
	ppid, err0 := strconv.Atoi(string(f[1]))
	pgrp, err1 := strconv.Atoi(string(f[2]))
	session, err2 := strconv.Atoi(string(f[3]))
	if err0 != nil || err1 != nil || err2 != nil {
		return procStat{}, false
	}
	return procStat{comm: string(b[open+1 : end]), state: f[0][0], ppid: ppid, pgrp: pgrp, session: session}, true
}

// KillGroupOf kills a process left behind, and its group when it leads one.
func KillGroupOf(lp leftProc) {
	if lp.pgrp == lp.Pid {
		syscall.Kill(-lp.Pid, syscall.SIGKILL)
	}
	syscall.Kill(lp.Pid, syscall.SIGKILL)
}
