//go:build !linux

package watchdog

// unreadRequestBytes is unknown off Linux, so a request is never sent to a
// second worker there (PROTOCOL.md §9.3).
func (l *lane) unreadRequestBytes() int { return -1 }
