//go:build !linux

package worker

// UnreadRequestBytes is unknown off Linux, so a request is never sent to a
// second worker there (PROTOCOL.md §9.3).
func (l *Lane) UnreadRequestBytes() int { return -1 }
