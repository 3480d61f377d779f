package spawn

import (
	"time"
)

// PROTOCOL.md §9.1: backoff after consecutive initialisation failures.
const (
	backoffFirst   = 100 * time.Millisecond
	backoffMax     = 30 * time.Second
	CrashLoopAfter = 3
)

// BackoffAfter is the delay of §9.1 after n consecutive initialisation
// failures.
func BackoffAfter(n int) time.Duration {
	d := backoffFirst
	for i := 1; i < n && d < backoffMax; i++ {
		d *= 2
	}
	return min(d, backoffMax)
}
