package spawn

import (
	"fmt"
	"strconv"
	"strings"
	"syscall"
)

// The control records of the single fork (PROTOCOL.md §2.6, "Workers that
// stay the template's children", capability fork-child): the request that
// asks for it, the template's report of a worker's exit, and the watchdog's
// word to reap it. The fork answers are §2.6's (wire.ParseForkAnswer).

// forkChildRequest is "fork-child <slot>\n": the worker makes its temporary
// directory itself, in the root the template was given (§2.7). With unasked,
// "fork-child <slot> unasked\n": the worker also answers the handshake
// without being asked (§2.6, capability unasked-handshake).
func forkChildRequest(slot int, unasked bool) []byte {
	if unasked {
		return []byte("fork-child " + strconv.Itoa(slot) + " unasked\n")
	}
	return []byte("fork-child " + strconv.Itoa(slot) + "\n")
}

// reapRecord is "reap <pid>\n": the watchdog is done with the worker's pid.
func reapRecord(pid int) []byte { return []byte("reap " + strconv.Itoa(pid) + "\n") }

// childExit is a parsed "exited <pid> exit <code>\n" or "exited <pid> signal
// <number>\n".
type childExit struct {
	Pid    int
	Status string // as os.ProcessState says it: "exit status 1", "signal: killed"
}

// isExitRecord tells an exit report from a fork answer, before parsing.
func isExitRecord(b []byte) bool { return strings.HasPrefix(string(b), "exited ") }

// parseExitRecord is strict, as wire.ParseForkAnswer: anything off is a
// protocol error (§2.6).
func parseExitRecord(b []byte) (childExit, error) {
	s, ok := strings.CutSuffix(string(b), "\n")
	if !ok {
		return childExit{}, fmt.Errorf("exit report %q does not end in a newline", b)
	}
	f := strings.Split(s, " ")
	if len(f) != 4 || f[0] != "exited" {
		return childExit{}, fmt.Errorf("malformed exit report %q", b)
	}
	pid, err := strconv.Atoi(f[1])
	if err != nil || pid <= 1 || f[1][0] == '0' || f[1][0] == '+' {
		return childExit{}, fmt.Errorf("exit report %q: bad pid", b)
	}
	n, err := strconv.Atoi(f[3])
	if err != nil || n < 0 || f[3][0] == '+' || (len(f[3]) > 1 && f[3][0] == '0') {
		return childExit{}, fmt.Errorf("exit report %q: bad number", b)
	}
	switch {
	case f[2] == "exit" && n <= 255:
		return childExit{Pid: pid, Status: "exit status " + f[3]}, nil
	case f[2] == "signal" && n >= 1 && n <= 64:
		return childExit{Pid: pid, Status: "signal: " + syscall.Signal(n).String()}, nil
	}
	return childExit{}, fmt.Errorf("exit report %q: want exit 0-255 or signal 1-64", b)
}
