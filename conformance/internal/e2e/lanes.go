package e2e

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Lanes (PROTOCOL.md §2.5): what the e2e layer needs to know when it runs
// under -watchdog-flags "-lanes K", and the helpers of lane-aware checks.

// LaneCounts is the lanes object of /_/ready and /_/health with lanes > 1
// (§9.2): the lanes of live workers by state.
type LaneCounts struct {
	Free     int `json:"free"`
	Busy     int `json:"busy"`
	Draining int `json:"draining"`
}

// Total is the number of lanes of the live workers.
func (l *LaneCounts) Total() int { return l.Free + l.Busy + l.Draining }

// lanes is the K the layer's watchdog flags ask for (-lanes K); without
// one, or with -lanes auto (the watchdog's default, §2.5 "Offered lanes"),
// the L the layer's probe found a worker served on (probeAutoLanes), else 1.
// The flag package keeps the last of repeated flags, and so does this.
func (c *Config) lanes() int {
	if k := c.givenLanes(); k > 0 {
		return k
	}
	return max(c.autoLanes, 1)
}

// givenLanes is the K of the layer's -lanes K, 0 without one or with
// -lanes auto.
func (c *Config) givenLanes() int {
	k := 0
	for i, f := range c.WatchdogFlags {
		name, val, hasVal := strings.Cut(strings.TrimLeft(f, "-"), "=")
		if name != "lanes" || !strings.HasPrefix(f, "-") {
			continue
		}
		if !hasVal {
			if i+1 >= len(c.WatchdogFlags) {
				continue
			}
			val = c.WatchdogFlags[i+1]
		}
		if n, err := strconv.Atoi(val); err == nil {
			k = n
		} else {
			k = 0 // auto
		}
	}
	return k
}

// probeAutoLanes learns, when the layer's flags leave lanes at auto, how
// many lanes the library is served on under it (§2.5 "Offered lanes"): a
// watchdog with the layer's flags and -workers 1, its /_/ready lane
// counts. The layer's checks then expect that many lanes, as under -lanes
// L; a library that prefers one lane is checked exactly as before.
func probeAutoLanes(ctx context.Context, c *Config) error {
	if c.givenLanes() > 0 || c.Watchdog == "" {
		return nil
	}
	pctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	wd, err := StartWatchdog(pctx, c.Watchdog, c.Function, c.flags([]string{"-workers", "1"}), nil)
	if err != nil {
		return err
	}
	defer wd.Stop()
	if err := wd.WaitReady(pctx, 1); err != nil {
		return fmt.Errorf("%v\n%s", err, wd.Tail())
	}
	c.autoLanes = 1
	code, st, body, err := wd.status(pctx, "/_/ready")
	if err != nil || code != 200 {
		return fmt.Errorf("/_/ready: %d %q %v", code, body, err)
	}
	if st.Lanes != nil && st.Lanes.Total() > 1 {
		c.autoLanes = st.Lanes.Total()
	}
	return nil
}

// k is the K of the watchdog the check talks to: the check's own -lanes
// (startLanes) or the layer's.
func (t *T) k() int {
	if t.ownLanes > 0 {
		return t.ownLanes
	}
	return t.cfg.lanes()
}

// lanesPerWorker is L = min(K, N) of §2.5: the lanes each worker is served
// on, from /_/ready's lane counts once n workers are idle. It is 1 when
// the layer runs without -lanes, or when the library does not list streams
// (the watchdog then serves each worker on lane 1 alone).
func (t *T) lanesPerWorker(n int) int {
	if t.k() <= 1 {
		return 1
	}
	t.WaitIdle(n)
	l := 0
	t.Eventually(fmt.Sprintf("/_/ready with lane counts of %d idle workers", n), func() (bool, string) {
		code, st, body, err := t.WD.status(t.ctx, "/_/ready")
		if err == nil && code == 200 && st.Lanes == nil && t.ownLanes == 0 && t.cfg.givenLanes() == 0 {
			l = 1 // lanes=auto where lanes cannot be given (stdio, spawn=fork): one lane (§2.5)
			return true, ""
		}
		if err != nil || code != 200 || st.Idle == nil || st.Busy == nil || st.Lanes == nil {
			return false, fmt.Sprintf("%d %q %v", code, body, err)
		}
		workers := *st.Idle + *st.Busy
		if workers < n || st.Lanes.Total()%workers != 0 {
			return false, string(body)
		}
		l = st.Lanes.Total() / workers
		return true, ""
	})
	return l
}

// needLanes skips a check of the lanes group unless each of n workers is
// served on at least min lanes (§2.5: a library that does not list
// streams, or states AfterBurn-Streams: 1, is served on lane 1 alone).
func (t *T) needLanes(n, min int) int {
	l := t.lanesPerWorker(n)
	if l < min {
		t.Skipf("each worker is served on %d lane(s) where -lanes %d asked for more: the library does not list streams or serves fewer lanes (AfterBurn-Streams, §2.5); this check needs %d", l, t.k(), min)
	}
	return l
}

// WaitLanes waits until /_/ready's lane counts satisfy cond.
func (t *T) WaitLanes(what string, cond func(LaneCounts) bool) {
	t.Eventually(what+" in /_/ready's lanes", func() (bool, string) {
		code, st, body, err := t.WD.status(t.ctx, "/_/ready")
		if err != nil || st == nil || st.Lanes == nil {
			return false, fmt.Sprintf("%d %q %v", code, body, err)
		}
		return cond(*st.Lanes), string(body)
	})
}
