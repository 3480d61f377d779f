package pool

import "testing"

// TestWithJitter: recycling budgets get up to a tenth more, so that workers
// started together are not recycled together (§9.7).
func TestWithJitter(t *testing.T) {
	for i := 0; i < 1000; i++ {
		if n := withJitter(100); n < 100 || n > 110 {
			t.Fatalf("withJitter(100) = %d; want 100..110", n)
		}
	}
}
