package afterburn

import (
	"fmt"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"syscall"
	"testing"
)

// A lone lane on blocking pipes serves with a second processor when GOMAXPROCS was 1
// and the environment did not set it (spareProcessor says why), and Serve puts the old
// value back when it returns; several lanes wait on the poller and change nothing.
func TestSpareProcessor(t *testing.T) {
	before := runtime.GOMAXPROCS(0)
	defer runtime.GOMAXPROCS(before)
	for _, tc := range []struct {
		lanes   int
		procs   int
		env     string // "" leaves GOMAXPROCS unset
		inServe int
	}{
		{lanes: 1, procs: 1, inServe: 2},
		{lanes: 1, procs: 1, env: "1", inServe: 1}, // the user's choice
		{lanes: 1, procs: 3, inServe: 3},
		{lanes: 2, procs: 1, inServe: 1}, // on the poller: an idle lane parks
	} {
		t.Run(fmt.Sprintf("lanes=%d procs=%d env=%q", tc.lanes, tc.procs, tc.env), func(t *testing.T) {
			if tc.env != "" {
				t.Setenv("GOMAXPROCS", tc.env)
			} else {
				t.Setenv("GOMAXPROCS", "") // restored after the test
				os.Unsetenv("GOMAXPROCS")
			}
			runtime.GOMAXPROCS(tc.procs)
			ls := newLaneSet(t, tc.lanes, false)
			if tc.lanes == 1 { // a watchdog started with -lanes 1 names no lane variables
				fdsVar, cancelVar := laneEnv{}.varNames()
				os.Unsetenv(fdsVar)
				os.Unsetenv(cancelVar)
				syscall.Close(ls.fds[len(ls.fds)-1]) // the cancel pipe's, unnamed now
			}
			ls.serve(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Write([]byte(strconv.Itoa(runtime.GOMAXPROCS(0))))
			}))
			for lane := 1; lane <= tc.lanes; lane++ {
				ls.write(lane, request("/", "r"+strconv.Itoa(lane), "t"+strconv.Itoa(lane)))
				if _, body := ls.response(lane); body != strconv.Itoa(tc.inServe) {
					t.Errorf("lane %d: GOMAXPROCS in the handler %s; want %d", lane, body, tc.inServe)
				}
			}
			if err := ls.end(); err != nil {
				t.Fatalf("Serve: %v", err)
			}
			if got := runtime.GOMAXPROCS(0); got != tc.procs {
				t.Errorf("GOMAXPROCS after Serve %d; want %d, as before", got, tc.procs)
			}
		})
	}
}
