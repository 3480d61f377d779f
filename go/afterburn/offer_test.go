package afterburn

// Tests of offered lanes (PROTOCOL.md §2.5 "Offered lanes"): under the watchdog's
// default, lanes=auto, the lanes are named by AFTERBURN_STREAM_OFFER_FDS and
// AFTERBURN_STREAM_OFFER_CANCEL_FD, and the worker answers how many it prefers, serves
// L = min(K, N, P) of them and closes the others. Serve runs in this process on
// os.Pipe descriptors, as in lanes_test.go.

import (
	"errors"
	"fmt"
	"net/http"
	"os"
	"reflect"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

func TestLaneEnvFrom(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		want laneEnv
	}{
		{"nothing: one lane", nil, laneEnv{cancel: -1}},
		{"given", map[string]string{givenFDsVar: "5,6,7,8", givenCancelVar: "9"},
			laneEnv{pairs: [][2]int{{5, 6}, {7, 8}}, cancel: 9}},
		{"offered", map[string]string{offeredFDsVar: "5,6,7,8", offeredCancelVar: "9"},
			laneEnv{pairs: [][2]int{{5, 6}, {7, 8}}, cancel: 9, offered: true}},
		{"offered beside AFTERBURN_FDS", map[string]string{"AFTERBURN_FDS": "3,4", offeredFDsVar: "5,6", offeredCancelVar: "7"},
			laneEnv{pairs: [][2]int{{5, 6}}, cancel: 7, offered: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := laneEnvFrom(mapLookup(tt.env))
			if err != nil || !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("laneEnvFrom(%v) = %+v, %v; want %+v", tt.env, got, err, tt.want)
			}
		})
	}
}

// L of §2.5 and the AfterBurn-Streams-Preferred answered: min(K, N) of lanes given,
// where the preference plays no part and is not sent; min(K, N, P) of an offer, whose
// answer is P, at most N.
func TestLanesInUse(t *testing.T) {
	tests := []struct {
		k                    int
		offered              bool
		maxLanes, preferred  int
		wantInUse, wantField int
	}{
		{4, false, defaultMaxLanes, 1, 4, 0},
		{4, false, 2, 8, 2, 0},
		{16, true, defaultMaxLanes, 1, 1, 1},
		{16, true, defaultMaxLanes, 3, 3, 3},
		{4, true, defaultMaxLanes, 8, 4, 8},
		{16, true, 2, 8, 2, 2},
		{1, true, defaultMaxLanes, 8, 1, 8},
	}
	for _, tt := range tests {
		le := laneEnv{pairs: make([][2]int, tt.k-1), cancel: -1, offered: tt.offered}
		inUse, field := le.lanesInUse(tt.maxLanes, tt.preferred), le.preferredAnswer(tt.maxLanes, tt.preferred)
		if inUse != tt.wantInUse || field != tt.wantField {
			t.Errorf("K=%d offered=%v N=%d P=%d: %d lanes, AfterBurn-Streams-Preferred %d; want %d, %d",
				tt.k, tt.offered, tt.maxLanes, tt.preferred, inUse, field, tt.wantInUse, tt.wantField)
		}
	}
}

func TestPreferredLanesFrom(t *testing.T) {
	for _, tt := range []struct {
		env      map[string]string
		fromCode int
		want     int
	}{
		{nil, 1, 1},
		{nil, 6, 6},
		{map[string]string{preferredLanesEnv: "4"}, 1, 4},
		{map[string]string{preferredLanesEnv: "1"}, 8, 1}, // the operator's word wins
	} {
		if got, err := preferredLanesFrom(mapLookup(tt.env), tt.fromCode); got != tt.want || err != nil {
			t.Errorf("%v, PreferredLanes(%d): got %d, %v; want %d", tt.env, tt.fromCode, got, err, tt.want)
		}
	}
	for _, v := range []string{"", "0", "-1", "x", " 2", "2 ", "1.5", "99999999999999999999"} {
		_, err := preferredLanesFrom(mapLookup(map[string]string{preferredLanesEnv: v}), 1)
		if err == nil || !strings.Contains(err.Error(), "bad "+preferredLanesEnv+" in environment: "+strconv.Quote(v)) {
			t.Errorf("%s=%q: got %v; want an error naming the variable and the value", preferredLanesEnv, v, err)
		}
	}
}

func mapLookup(env map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) {
		v, ok := env[k]
		return v, ok
	}
}

// TestOfferedLanes: the worker answers an offer with its preference, serves
// min(K, N, P) lanes at once (each handler waits until all have arrived, so lanes
// served one after another would never answer), and closes the others: their
// response pipes reach EOF, and with one lane the cancel pipe has no reader.
func TestOfferedLanes(t *testing.T) {
	tests := []struct {
		name          string
		k             int
		env           string // AFTERBURN_GO_PREFERRED_LANES; "" unset
		opts          []Option
		wantStreams   string
		wantPreferred string
		served        int
	}{
		{"by default one", 4, "", nil, "1024", "1", 1},
		{"PreferredLanes(3)", 4, "", []Option{PreferredLanes(3)}, "1024", "3", 3},
		{"a preference above the offer", 3, "", []Option{PreferredLanes(8)}, "1024", "8", 3},
		{"MaxLanes bounds the preference", 4, "", []Option{PreferredLanes(8), MaxLanes(2)}, "2", "2", 2},
		{"the variable wins over the code", 4, "2", []Option{PreferredLanes(3)}, "1024", "2", 2},
		{"the variable says one", 4, "1", []Option{PreferredLanes(4)}, "1024", "1", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			unsetPreferredLanesEnv(t)
			if tt.env != "" {
				t.Setenv(preferredLanesEnv, tt.env)
			}
			arrived := make(chan struct{}, tt.served)
			release := make(chan struct{})
			ls := newLaneSet(t, tt.k, true)
			ls.serve(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				arrived <- struct{}{}
				<-release
				w.Write([]byte(RequestID(r)))
			}), tt.opts...)
			ls.write(1, handshake)
			resp, _ := ls.response(1)
			if got := resp.Header.Get("AfterBurn-Streams"); got != tt.wantStreams {
				t.Errorf("AfterBurn-Streams: got %q; want %s", got, tt.wantStreams)
			}
			if got := resp.Header.Values("AfterBurn-Streams-Preferred"); len(got) != 1 || got[0] != tt.wantPreferred {
				t.Errorf("AfterBurn-Streams-Preferred: got %q; want %s", got, tt.wantPreferred)
			}
			for lane := tt.served + 1; lane <= tt.k; lane++ {
				ls.expectEOF(lane)
			}
			_, err := ls.cancel.Write([]byte("cancel nothing\n"))
			if tt.served == 1 && !errors.Is(err, syscall.EPIPE) {
				t.Errorf("writing to the cancel pipe of one lane: %v; want EPIPE, the worker closed it", err)
			} else if tt.served > 1 && err != nil {
				t.Errorf("writing to the cancel pipe of %d lanes: %v; want it read", tt.served, err)
			}
			for lane := 1; lane <= tt.served; lane++ {
				ls.write(lane, request("/", fmt.Sprint("r", lane), fmt.Sprint("t", lane)))
			}
			for lane := 1; lane <= tt.served; lane++ {
				waitFor(t, arrived, fmt.Sprintf("the handler of request %d of %d, all on lanes at once", lane, tt.served))
			}
			close(release)
			for lane := 1; lane <= tt.served; lane++ {
				if resp, body := ls.response(lane); resp.StatusCode != 200 || body != fmt.Sprint("r", lane) {
					t.Fatalf("lane %d: got %d %q", lane, resp.StatusCode, body)
				}
			}
			if err := ls.end(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestOfferUnusedDescriptorsClosed: by the handshake's reply the worker has closed
// every offered descriptor it does not serve, and nothing else: /proc/self/fd holds
// that many fewer, none of them is the pipe it was, and the served ones are.
func TestOfferUnusedDescriptorsClosed(t *testing.T) {
	const k = 6
	for _, served := range []int{1, 3} {
		t.Run(fmt.Sprintf("served=%d", served), func(t *testing.T) {
			unsetPreferredLanesEnv(t)
			ls := newLaneSet(t, k, true)
			before := openDescriptors(t)
			ls.serve(echoHandler, PreferredLanes(served))
			ls.write(1, handshake)
			ls.response(1)
			after := openDescriptors(t)

			lanesKept := ls.fds[:2*(served-1)] // ls.fds: lanes 2 to K, then the cancel pipe
			unused := ls.fds[2*(served-1) : 2*(k-1)]
			cancel := ls.fds[len(ls.fds)-1:]
			kept := append(append([]int{}, lanesKept...), cancel...)
			if served == 1 {
				kept, unused = lanesKept, append(append([]int{}, unused...), cancel...)
			}
			for _, fd := range unused {
				if after[fd] == before[fd] {
					t.Errorf("descriptor %d (%s) open after the handshake; want it closed: its lane is not served", fd, before[fd])
				}
			}
			for _, fd := range kept {
				if after[fd] != before[fd] {
					t.Errorf("descriptor %d: %q after the handshake, %q before; want it open: it is served", fd, after[fd], before[fd])
				}
			}
			if len(after) != len(before)-len(unused) {
				t.Errorf("/proc/self/fd: %d descriptors before Serve, %d after the handshake; want %d fewer, the unused lanes' (%v)\nbefore %v\nafter %v",
					len(before), len(after), len(unused), unused, before, after)
			}
			if err := ls.end(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// openDescriptors maps every descriptor open in this process to what it is, as
// /proc/self/fd says ("pipe:[123]", a path).
func openDescriptors(t *testing.T) map[int]string {
	t.Helper()
	const dir = "/proc/self/fd"
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Skipf("needs %s: %v", dir, err)
	}
	open := map[int]string{}
	for _, e := range entries {
		fd, _ := strconv.Atoi(e.Name())
		if target, err := os.Readlink(dir + "/" + e.Name()); err == nil { // ReadDir's own is closed
			open[fd] = target
		}
	}
	return open
}

// unsetPreferredLanesEnv keeps the test's environment from choosing the preference.
func unsetPreferredLanesEnv(t *testing.T) {
	t.Setenv(preferredLanesEnv, "") // restored when the test ends
	os.Unsetenv(preferredLanesEnv)
}

// TestOfferEnvironmentErrors: an offer Serve cannot use is an error naming the
// variable, before any request is served (§2.5, as §2.3 for AFTERBURN_FDS). No lane
// descriptor is closed then: one the environment names wrongly may be a file or a
// connection of the function's own.
func TestOfferEnvironmentErrors(t *testing.T) {
	// in, out: lane 1 (AFTERBURN_FDS); laneIn, laneOut: the library's ends of one more
	// lane; file: a regular file, not a pipe.
	type fds struct{ in, out, laneIn, laneOut, file int }
	tests := []struct {
		name string
		env  func(f fds) map[string]string
		opts []Option
		want string
	}{
		{"odd count", func(f fds) map[string]string {
			return map[string]string{offeredFDsVar: fmt.Sprintf("%d,%d,%d", f.laneIn, f.laneOut, f.file)}
		}, nil, "bad " + offeredFDsVar},
		{"empty", func(f fds) map[string]string { return map[string]string{offeredFDsVar: ""} }, nil, "bad " + offeredFDsVar},
		{"stdio", func(f fds) map[string]string { return map[string]string{offeredFDsVar: "1,2"} }, nil, "bad " + offeredFDsVar},
		{"cancel not a number", func(f fds) map[string]string { return map[string]string{offeredCancelVar: "x"} }, nil, "bad " + offeredCancelVar},
		{"both given and offered", func(f fds) map[string]string {
			return map[string]string{givenFDsVar: fmt.Sprintf("%d,%d", f.laneIn, f.laneOut), offeredCancelVar: strconv.Itoa(f.file)}
		}, nil, "not both"},
		{"a descriptor named twice", func(f fds) map[string]string {
			return map[string]string{offeredFDsVar: fmt.Sprintf("%d,%d,%d,%d", f.laneIn, f.laneOut, f.laneIn, f.laneOut)}
		}, nil, "each descriptor once"},
		{"lane 1's descriptors", func(f fds) map[string]string {
			return map[string]string{offeredFDsVar: fmt.Sprintf("%d,%d", f.in, f.out)}
		}, nil, "none of AFTERBURN_FDS"},
		{"cancel pipe named as a lane", func(f fds) map[string]string {
			return map[string]string{offeredFDsVar: fmt.Sprintf("%d,%d", f.laneIn, f.laneOut), offeredCancelVar: strconv.Itoa(f.laneIn)}
		}, nil, "bad " + offeredCancelVar},
		{"not a pipe", func(f fds) map[string]string {
			return map[string]string{offeredFDsVar: fmt.Sprintf("%d,%d", f.laneIn, f.laneOut), offeredCancelVar: strconv.Itoa(f.file)}
		}, nil, "which is not a pipe"},
		{"the wrong way round", func(f fds) map[string]string {
			return map[string]string{offeredFDsVar: fmt.Sprintf("%d,%d", f.laneOut, f.laneIn)}
		}, nil, "but it is a pipe's write end"},
		{"not open", func(f fds) map[string]string {
			return map[string]string{offeredFDsVar: "1000001,1000002"}
		}, nil, "which is not open"},
		{"preference not a number", func(f fds) map[string]string { return map[string]string{preferredLanesEnv: "many"} }, nil, "bad " + preferredLanesEnv},
		{"PreferredLanes(0)", func(f fds) map[string]string { return nil }, []Option{PreferredLanes(0)}, "PreferredLanes(0): want at least 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			unsetPreferredLanesEnv(t)
			in, out, req, resp := pipeFDs(t)
			defer req.Close()
			defer resp.Close()
			laneIn, laneOut, laneReq, laneResp := pipeFDs(t)
			defer laneReq.Close()
			defer laneResp.Close()
			file, err := os.CreateTemp(t.TempDir(), "not-a-pipe")
			if err != nil {
				t.Fatal(err)
			}
			defer file.Close()
			f := fds{in, out, laneIn, laneOut, dupFD(t, file)}
			lanes := []int{f.laneIn, f.laneOut, f.file}
			t.Setenv("AFTERBURN_FDS", fmt.Sprintf("%d,%d", in, out))
			for k, v := range tt.env(f) {
				t.Setenv(k, v)
			}
			// A Serve that took this environment would serve lane 1: the request pipe
			// ends at once, so that it returns nil rather than wait for requests.
			req.Close()
			before := openDescriptors(t)
			err = Serve(http.NotFoundHandler(), tt.opts...)
			after := openDescriptors(t)
			// Serve closes lane 1 when it fails after opening it, and leaves it
			// otherwise; the test closes whatever is still what it made.
			for _, fd := range append([]int{in, out}, lanes...) {
				if after[fd] == before[fd] {
					syscall.Close(fd)
				}
			}
			if err == nil || !strings.HasPrefix(err.Error(), "afterburn: ") || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Serve returned %v; want an error containing %q", err, tt.want)
			}
			for _, fd := range lanes {
				if after[fd] != before[fd] {
					t.Errorf("descriptor %d: %q after the error, %q before; want it left open", fd, after[fd], before[fd])
				}
			}
		})
	}
}
