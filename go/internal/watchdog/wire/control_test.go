package wire

import (
	"strings"
	"testing"
)

func TestForkRequest(t *testing.T) {
	if got := string(ForkRequest(12, "")); got != "fork 12\n" {
		t.Fatalf(`forkRequest(12, "") = %q`, got)
	}
	// §2.7: under isolation=request the worker's temporary directory follows.
	if got := string(ForkRequest(3, "/tmp/afterburn-requests-1/w3-7")); got != "fork 3 /tmp/afterburn-requests-1/w3-7\n" {
		t.Fatalf("forkRequest(3, dir) = %q", got)
	}
}

func TestParseForkAnswer(t *testing.T) {
	good := map[string]forkAnswer{
		"forked 1 1234\n": {Slot: 1, Pid: 1234},
		"failed 3 EAGAIN: Resource temporarily unavailable\n": {Slot: 3, Reason: "EAGAIN: Resource temporarily unavailable"},
		"failed 2 x\n": {Slot: 2, Reason: "x"},
	}
	for in, want := range good {
		got, err := ParseForkAnswer([]byte(in))
		if err != nil || got != want {
			t.Errorf("parseForkAnswer(%q) = %+v, %v; want %+v", in, got, err, want)
		}
	}
	bad := []string{
		"", "\n", "forked 1 1234", "forked 1 1234\n\n", "forked 1 1234\r\n", "forked 1\n",
		"forked 1 \n", "forked  1 1234\n", "forked 01 1234\n", "forked 1 -5\n", "forked 1 1\n",
		"forked 1 12a\n", "forked 1 12 13\n", "failed 1\n", "failed x reason\n", "fork 1\n",
		"FORKED 1 1234\n", "forked 1 99999999999999999999999\n", "failed 1 a\x00b\n",
		"failed 1 " + strings.Repeat("x", 600) + "\n",
	}
	for _, in := range bad {
		if got, err := ParseForkAnswer([]byte(in)); err == nil {
			t.Errorf("parseForkAnswer(%q) = %+v; want an error", in, got)
		}
	}
}
