package e2e

import (
	"slices"
	"strings"
	"testing"
)

// TestLayerFlagsComeFirst: the layer's mode flags (-watchdog-flags) reach every watchdog,
// before a check's own, which win where both set one; a check's slice is not written into.
func TestLayerFlagsComeFirst(t *testing.T) {
	c := &Config{WatchdogFlags: []string{"-spawn", "fork", "-workers", "4"}}
	own := make([]string, 2, 8)
	copy(own, []string{"-workers", "1"})
	got := c.flags(own)
	if want := []string{"-spawn", "fork", "-workers", "4", "-workers", "1"}; !slices.Equal(got, want) {
		t.Fatalf("flags = %q; want %q", got, want)
	}
	got[0] = "x"
	if c.WatchdogFlags[0] != "-spawn" || own[0] != "-workers" {
		t.Fatalf("flags shares memory with its inputs: %q, %q", c.WatchdogFlags, own)
	}
	if got := (&Config{}).flags(nil); len(got) != 0 {
		t.Fatalf("no flags at all: %q", got)
	}
}

// TestForkingSpotsTheMode: the layer knows it runs in fork mode whichever way the flag is
// written, and not otherwise.
func TestForkingSpotsTheMode(t *testing.T) {
	for flags, want := range map[string]bool{
		"-spawn fork": true, "--spawn fork": true, "-spawn=fork": true, "-workers 2 -spawn fork": true,
		"-spawn exec": false, "": false, "-spawn": false, "-fork_timeout 5s": false,
	} {
		c := &Config{WatchdogFlags: strings.Fields(flags)}
		if got := c.forking(); got != want {
			t.Errorf("forking() with %q = %v; want %v", flags, got, want)
		}
	}
}

// TestLanesReadsK: the layer learns K of §2.5 from -lanes K however it is written, the last
// one winning as with the flag package, and 1 without it.
func TestLanesReadsK(t *testing.T) {
	for flags, want := range map[string]int{
		"-lanes 4": 4, "--lanes 4": 4, "-lanes=3": 3, "--lanes=2": 2, "-workers 2 -lanes 4 -lanes 8": 8,
		"": 1, "-lanes": 1, "-lanesx 1": 1, "-workers 4": 1, "-spawn fork": 1,
	} {
		c := &Config{WatchdogFlags: strings.Fields(flags)}
		if got := c.lanes(); got != want {
			t.Errorf("lanes() with %q = %d; want %d", flags, got, want)
		}
	}
}
