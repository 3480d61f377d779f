//go:build !linux

package proc

import "errors"

// StartReaper does nothing off Linux, where the watchdog does not run as a
// container's PID 1.
func StartReaper() (release func()) { return func() {} }

// BecomeSubreaper: fork mode (PROTOCOL.md §2.6) needs Linux's
// PR_SET_CHILD_SUBREAPER; config.check refuses it elsewhere.
func BecomeSubreaper() error { return errors.New("spawn=fork needs Linux") }
