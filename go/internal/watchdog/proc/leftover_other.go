//go:build !linux

package proc

// leftProc is a process a request left behind (PROTOCOL.md §2.7).
type leftProc struct {
	Pid, pgrp int
	Comm      string
}

// LeftBehind: isolation=request needs spawn=fork, which needs Linux.
func LeftBehind(dead int) []leftProc { return nil }

func KillGroupOf(leftProc) {}

// ParentOf is not known off Linux, where fork mode does not run (§2.6).
func ParentOf(pid int) int { return 0 }
