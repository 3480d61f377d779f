//go:build !linux

package watchdog

import "errors"

// startReaper does nothing off Linux, where the watchdog does not run as a
// container's PID 1.
func startReaper() (release func()) { return func() {} }

// becomeSubreaper: fork mode (PROTOCOL.md §2.6) needs Linux's
// PR_SET_CHILD_SUBREAPER; config.check refuses it elsewhere.
func becomeSubreaper() error { return errors.New("spawn=fork needs Linux") }
