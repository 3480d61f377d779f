//go:build !linux

package watchdog

// markInheritedCloseOnExec is Linux-only (cloexec_linux.go).
func markInheritedCloseOnExec() error { return nil }
