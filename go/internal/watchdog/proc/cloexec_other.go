//go:build !linux

package proc

// MarkInheritedCloseOnExec is Linux-only (cloexec_linux.go).
func MarkInheritedCloseOnExec() error { return nil }
