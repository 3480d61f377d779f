package rawio

import "time"

// maxGrain keeps a late exec_timeout well inside the 50 ms a library waits
// past the deadline before it cancels, so that the watchdog's 504 still
// comes first (PROTOCOL.md §5.2, §8.6).
const maxGrain = 10 * time.Millisecond

// Coarse is the deadline t, about timeout from now, rounded up to a grain
// of timeout/64 (at least 1 ms, at most 10 ms). The hot path sets
// deadlines per request (exec_timeout on the lane's pipes, the idle and
// write timeouts on the client's socket), and each new one re-arms the
// descriptor's timer under the poller's locks, about 600 instructions; a
// deadline equal to the one in place is left alone. Rounded, consecutive
// requests ask for the same deadline for a grain's time, and a deadline
// passes up to one grain late, never early (PROTOCOL.md §5.2 allows
// it). A zero t stays zero.
func Coarse(t time.Time, timeout time.Duration) time.Time {
	if t.IsZero() {
		return t
	}
	grain := int64(min(max(timeout/64, time.Millisecond), maxGrain))
	n := t.UnixNano() // wall time: the result has no monotonic reading
	r := n - n%grain
	if r < n {
		r += grain
	}
	return time.Unix(0, r)
}
