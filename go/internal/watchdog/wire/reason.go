package wire

// RestartReason is why a worker, or the template, was replaced: the restart
// reasons of PROTOCOL.md §9.1, and the reason label of
// afterburn_worker_restarts_total and afterburn_template_restarts_total
// (§10.4), which restartReasons lists.
type RestartReason string

const (
	ReasonInitFailed        RestartReason = "init_failed"        // its handshake failed (§9.1)
	ReasonInitTimeout       RestartReason = "init_timeout"       // no handshake reply in time (§3.5)
	ReasonCrashed           RestartReason = "crashed"            // it died or closed a pipe during an exchange (§8.4)
	ReasonBadResponse       RestartReason = "bad_response"       // a malformed response, or not its exchange's (§8.5, §4.6)
	ReasonTimeout           RestartReason = "timeout"            // an exchange passed its deadline (§8.6)
	ReasonRequestAborted    RestartReason = "request_aborted"    // the request body could not be completed (§6.4)
	ReasonWorkerClosed      RestartReason = "worker_closed"      // it answered with Connection: close (§4.4)
	ReasonUnsolicitedOutput RestartReason = "unsolicited_output" // bytes on its response pipe between exchanges (§9.6)
	ReasonUnresponsive      RestartReason = "unresponsive"       // no reply to a liveness handshake (§3.5)
	ReasonExited            RestartReason = "exited"             // it exited without an exchange (§9.3)
	ReasonStuck             RestartReason = "stuck"              // a late response did not end within cancel_grace (§2.5)
)

// Ends that are not restarts, so never counted as one: a worker recycled
// make-before-break (§9.7), and one that served its one exchange under
// isolation=request (§2.7).
const (
	ReasonRecycled RestartReason = "recycled"
	ReasonServed   RestartReason = "served"
)

// RestartReasons are the label values of the restart counters, every one
// present from the start.
var RestartReasons = []RestartReason{
	ReasonInitFailed, ReasonInitTimeout, ReasonCrashed, ReasonBadResponse, ReasonTimeout,
	ReasonRequestAborted, ReasonWorkerClosed, ReasonUnsolicitedOutput, ReasonUnresponsive, ReasonExited, ReasonStuck,
}
