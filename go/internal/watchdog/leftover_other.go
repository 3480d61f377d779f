//go:build !linux

package watchdog

// leftProc is a process a request left behind (PROTOCOL.md §2.7).
type leftProc struct {
	pid, pgrp int
	comm      string
}

// leftBehind: isolation=request needs spawn=fork, which needs Linux.
func leftBehind(dead int) []leftProc { return nil }

func killGroupOf(leftProc) {}
