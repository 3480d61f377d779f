package spawn

import (
	"testing"
	"time"

	"github.com/afterburn-dev/afterburn/go/internal/watchdog/worker"
)

// TestTemplateResetBeforeExitIsCrash: a template killed with a fork request
// unread resets its control socket (ECONNRESET) a moment before its exit is
// reaped. The restart reason is its exit, crashed (§2.6, §9.1), not
// worker_closed: the conformance check fork-template-crash saw the latter.
func TestTemplateResetBeforeExitIsCrash(t *testing.T) {
	tp, theirs, cmd := fakeTemplate(t, false)
	// A fork request the template never reads, then its end closes.
	if _, err := tp.conn.Write([]byte("fork 1")); err != nil {
		t.Fatal(err)
	}
	theirs.Close()
	tp.Watch()
	// Its exit is reaped a moment later (well within exitGrace).
	time.Sleep(worker.ExitGrace / 5)
	templateReaped(tp, cmd)

	select {
	case <-tp.dead:
	case <-time.After(5 * time.Second):
		t.Fatal("the template was never ended")
	}
	if tp.reason != "crashed" {
		t.Fatalf("reason %q (%s); want crashed: the reset came from a template that died", tp.reason, tp.why)
	}
}
