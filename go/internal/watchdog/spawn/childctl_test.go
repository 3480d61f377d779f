package spawn

import "testing"

func TestForkChildRequest(t *testing.T) {
	if got := string(forkChildRequest(2, false)); got != "fork-child 2\n" {
		t.Errorf("forkChildRequest(2, false) = %q; want %q", got, "fork-child 2\n")
	}
	if got := string(forkChildRequest(2, true)); got != "fork-child 2 unasked\n" {
		t.Errorf("forkChildRequest(2, true) = %q; want %q", got, "fork-child 2 unasked\n")
	}
	if got := string(reapRecord(1234)); got != "reap 1234\n" {
		t.Errorf("reapRecord(1234) = %q", got)
	}
}

func TestParseExitRecord(t *testing.T) {
	good := map[string]childExit{
		"exited 1234 exit 0\n":   {Pid: 1234, Status: "exit status 0"},
		"exited 99 exit 255\n":   {Pid: 99, Status: "exit status 255"},
		"exited 4321 signal 9\n": {Pid: 4321, Status: "signal: killed"},
	}
	for in, want := range good {
		got, err := parseExitRecord([]byte(in))
		if err != nil || got != want {
			t.Errorf("parseExitRecord(%q) = %+v, %v; want %+v", in, got, err, want)
		}
		if !isExitRecord([]byte(in)) {
			t.Errorf("isExitRecord(%q) = false", in)
		}
	}
	for _, in := range []string{
		"exited 1234 exit 0", "exited 1234 exit 0 \n", "exited 1234 exit\n", "exited 0 exit 0\n",
		"exited 1 exit 0\n", "exited 012 exit 0\n", "exited +12 exit 0\n", "exited x exit 0\n",
		"exited 12 exit 256\n", "exited 12 exit -1\n", "exited 12 exit 01\n", "exited 12 signal 0\n",
		"exited 12 signal 65\n", "exited 12 killed 9\n", "exited  12 exit 0\n", "exit 12 exit 0\n",
	} {
		if got, err := parseExitRecord([]byte(in)); err == nil {
			t.Errorf("parseExitRecord(%q) = %+v; want an error", in, got)
		}
	}
	if isExitRecord([]byte("forked 1 1234\n")) {
		t.Error(`isExitRecord("forked 1 1234\n") = true`)
	}
}
