//go:build !linux

package watchdog

// startReaper does nothing off Linux, where the watchdog does not run as a
// container's PID 1.
func startReaper() {}
