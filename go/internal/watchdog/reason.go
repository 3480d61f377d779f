package watchdog

// restartReason is why a worker, or the template, was replaced: the restart
// reasons of PROTOCOL.md §9.1, and the reason label of
// afterburn_worker_restarts_total and afterburn_template_restarts_total
// (§10.4), which restartReasons lists.
type restartReason string

const (
	reasonInitFailed        restartReason = "init_failed"        // its handshake failed (§9.1)
	reasonInitTimeout       restartReason = "init_timeout"       // no handshake reply in time (§3.5)
	reasonCrashed           restartReason = "crashed"            // it died or closed a pipe during an exchange (§8.4)
	reasonBadResponse       restartReason = "bad_response"       // a malformed response, or not its exchange's (§8.5, §4.6)
	reasonTimeout           restartReason = "timeout"            // an exchange passed its deadline (§8.6)
	reasonRequestAborted    restartReason = "request_aborted"    // the request body could not be completed (§6.4)
	reasonWorkerClosed      restartReason = "worker_closed"      // it answered with Connection: close (§4.4)
	reasonUnsolicitedOutput restartReason = "unsolicited_output" // bytes on its response pipe between exchanges (§9.6)
	reasonUnresponsive      restartReason = "unresponsive"       // no reply to a liveness handshake (§3.5)
	reasonExited            restartReason = "exited"             // it exited without an exchange (§9.3)
	reasonStuck             restartReason = "stuck"              // a late response did not end within cancel_grace (§2.5)
)

// Ends that are not restarts, so never counted as one: a worker recycled
// make-before-break (§9.7), and one that served its one exchange under
// isolation=request (§2.7).
const (
	reasonRecycled restartReason = "recycled"
	reasonServed   restartReason = "served"
)

// restartReasons are the label values of the restart counters, every one
// present from the start.
var restartReasons = []restartReason{
	reasonInitFailed, reasonInitTimeout, reasonCrashed, reasonBadResponse, reasonTimeout,
	reasonRequestAborted, reasonWorkerClosed, reasonUnsolicitedOutput, reasonUnresponsive, reasonExited, reasonStuck,
}
