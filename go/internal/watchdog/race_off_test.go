//go:build !race

package watchdog

const raceEnabled = false
