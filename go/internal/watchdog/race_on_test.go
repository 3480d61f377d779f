//go:build race

package watchdog

// raceEnabled: the race detector's instrumentation allocates, so allocation counts mean
// nothing under it.
const raceEnabled = true
