package watchdog

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/afterburn-dev/afterburn/go/internal/watchdog/config"
	"github.com/afterburn-dev/afterburn/go/internal/watchdog/pool"
)

// lanes=auto (PROTOCOL.md §2.5, §10.2): the watchdog offers lanes in
// variables only a library that states a preference reads, serves
// min(K, N, P) lanes, and offers later workers what the first one serves.

// given asks a lane child how many lanes it was given or offered and its pid.
func (h *harness) given() (k int, pid string) {
	h.t.Helper()
	resp, body := h.Get("/given")
	if resp.StatusCode != 200 {
		h.t.Fatalf("/given: %d %q", resp.StatusCode, body)
	}
	if _, err := fmt.Sscanf(body, "k %d pid %s", &k, &pid); err != nil {
		h.t.Fatalf("/given: %q: %v", body, err)
	}
	return k, pid
}

// environ is the environment the process pid was started with.
func environ(t *testing.T, pid string) map[string]string {
	t.Helper()
	b, err := os.ReadFile("/proc/" + pid + "/environ")
	if err != nil {
		t.Skipf("reading a worker's environment: %v", err)
	}
	env := map[string]string{}
	for _, kv := range strings.Split(string(b), "\x00") {
		if k, v, ok := strings.Cut(kv, "="); ok {
			env[k] = v
		}
	}
	return env
}

// crashAndWait ends the one worker, pid, and waits for its successor's
// free lanes (the crash's 502 comes once the pool has retired the worker).
func (h *harness) crashAndWait(pid string, free int) {
	h.t.Helper()
	h.Get("/crash")
	h.waitState("the successor ready", func(st pool.Status, ready bool) bool {
		return st.Idle == 1 && st.Lanes != nil && st.Lanes.Free == free
	})
	if _, now := h.given(); now == pid {
		h.t.Fatalf("pid %s still serves after /crash", pid)
	}
}

func TestLanesAutoServesThePreferredCount(t *testing.T) {
	t.Parallel()
	h := startLanes(t, config.LanesAuto, "64", nil, "AFTERBURN_TEST_PREFER=3")
	h.waitLanes("three free lanes", func(c pool.LaneCounts) bool { return c.Free == 3 && c.Busy == 0 })
	k, pid := h.given()
	if k != config.AutoLanes {
		t.Errorf("the first worker was offered %d lanes; want AutoLanes, %d", k, config.AutoLanes)
	}
	env := environ(t, pid)
	if env["AFTERBURN_STREAM_FDS"] != "" || env["AFTERBURN_STREAM_OFFER_FDS"] == "" || env["AFTERBURN_STREAM_OFFER_CANCEL_FD"] == "" {
		t.Errorf("the first worker's lane variables: STREAM_FDS %q, STREAM_OFFER_FDS %q, STREAM_OFFER_CANCEL_FD %q; want the offer's only",
			env["AFTERBURN_STREAM_FDS"], env["AFTERBURN_STREAM_OFFER_FDS"], env["AFTERBURN_STREAM_OFFER_CANCEL_FD"])
	}
	h.crashAndWait(pid, 3)
	if k, _ := h.given(); k != 3 {
		t.Errorf("the successor was offered %d lanes; want 3, what the first worker serves", k)
	}
	if !strings.Contains(h.logs.String(), "lanes=auto: the library serves 3 lane(s) per worker") {
		t.Errorf("no log line saying how many lanes auto settled on")
	}
}

func TestLanesAutoWithoutPreferenceIsOneLane(t *testing.T) {
	t.Parallel()
	// A library that predates auto: it lists streams and states 64, but
	// reads no offer, so it sees one lane and is served on one.
	h := startLanes(t, config.LanesAuto, "64", nil)
	h.waitLanes("one free lane", func(c pool.LaneCounts) bool { return c.Free == 1 && c.Busy == 0 })
	k, first := h.given()
	if k != 1 {
		t.Errorf("the library sees %d lanes; want 1: it reads no offer", k)
	}
	h.crashAndWait(first, 1)
	_, pid := h.given()
	for _, v := range []string{"AFTERBURN_STREAM_FDS", "AFTERBURN_STREAM_CANCEL_FD", "AFTERBURN_STREAM_OFFER_FDS", "AFTERBURN_STREAM_OFFER_CANCEL_FD"} {
		if got, ok := environ(t, pid)[v]; ok {
			t.Errorf("the successor has %s=%q; want no lane variable: offered what the first serves, one lane, as with lanes=1", v, got)
		}
	}
	if strings.Contains(h.logs.String(), "asks for") {
		t.Errorf("a warning that the library serves fewer lanes than asked; auto asks for none")
	}
}

func TestLanesExplicitIgnoresPreference(t *testing.T) {
	t.Parallel()
	h := startLanes(t, 4, "64", nil, "AFTERBURN_TEST_PREFER=2")
	h.waitLanes("four free lanes", func(c pool.LaneCounts) bool { return c.Free == 4 && c.Busy == 0 })
	if k, _ := h.given(); k != 4 {
		t.Errorf("the library was given %d lanes; want 4", k)
	}
}

func TestLanesAutoOfferedOnlyWhereLanesCanBe(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		args []string
		want bool
	}{
		{[]string{"--", "x"}, true},
		{[]string{"-lanes", "auto", "--", "x"}, true},
		{[]string{"-lanes", "1", "--", "x"}, false},
		{[]string{"-lanes", "4", "--", "x"}, false},
		{[]string{"-stdio", "--", "x"}, false},
		{[]string{"-handshake=false", "--", "x"}, false},
		{[]string{"-spawn", "fork", "--", "x"}, false},
		{[]string{"-spawn", "fork", "-isolation", "request", "--", "x"}, false},
	} {
		cfg, err := config.ParseConfig(c.args, func(string) string { return "" }, nil)
		if err != nil {
			if strings.Contains(err.Error(), "needs Linux") {
				continue
			}
			t.Fatalf("%v: %v", c.args, err)
		}
		if got := cfg.OffersLanes(); got != c.want {
			t.Errorf("%v: OffersLanes() = %v; want %v", c.args, got, c.want)
		}
	}
}
