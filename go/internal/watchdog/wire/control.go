package wire

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// The control socket's messages (PROTOCOL.md §2.6): each one SOCK_SEQPACKET
// record of at most controlMax bytes, ASCII, ending in one newline.
const ControlMax = 512

// ForkRequest is "fork <slot>\n", or under isolation=request "fork <slot>
// <tmpdir>\n" (§2.7); the four descriptors travel beside it as SCM_RIGHTS
// (spawn_fork.go).
func ForkRequest(slot int, tmpdir string) []byte {
	if tmpdir == "" {
		return []byte("fork " + strconv.Itoa(slot) + "\n")
	}
	return []byte("fork " + strconv.Itoa(slot) + " " + tmpdir + "\n")
}

// forkAnswer is a template's answer to a fork request.
type forkAnswer struct {
	Slot   int
	Pid    int    // "forked <slot> <pid>"; 0 for a failure
	Reason string // "failed <slot> <reason>"
}

// ParseForkAnswer reads one record from the template. It is strict: any
// other text is a protocol error (§2.6), and so is a pid that cannot be a
// child's.
func ParseForkAnswer(b []byte) (forkAnswer, error) {
	if len(b) > ControlMax {
		return forkAnswer{}, fmt.Errorf("control message of %d bytes, over %d", len(b), ControlMax)
	}
	s, ok := strings.CutSuffix(string(b), "\n")
	if !ok || strings.ContainsAny(s, "\n\r\x00") {
		return forkAnswer{}, fmt.Errorf("control message %q is not one line ending in \\n", b)
	}
	verb, rest, _ := strings.Cut(s, " ")
	slotText, arg, ok := strings.Cut(rest, " ")
	if !ok || arg == "" {
		return forkAnswer{}, fmt.Errorf("malformed control message %q", s)
	}
	slot, err := parseDecimal(slotText)
	if err != nil {
		return forkAnswer{}, fmt.Errorf("control message %q: bad slot: %v", s, err)
	}
	switch verb {
	case "forked":
		pid, err := parseDecimal(arg)
		if err != nil || pid < 2 {
			return forkAnswer{}, fmt.Errorf("control message %q: bad pid", s)
		}
		return forkAnswer{Slot: slot, Pid: pid}, nil
	case "failed":
		return forkAnswer{Slot: slot, Reason: arg}, nil
	}
	return forkAnswer{}, fmt.Errorf("unknown control message %q", s)
}

// parseDecimal accepts digits only: no sign, no leading zero, no spaces.
func parseDecimal(s string) (int, error) {
	if s == "" || (s[0] == '0' && len(s) > 1) || strings.Trim(s, "0123456789") != "" {
		return 0, errors.New("not a decimal number")
	}
	return strconv.Atoi(s)
}
