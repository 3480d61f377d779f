package e2e

import (
	"strconv"
	"time"
)

// Groups lists every e2e check, by the watchdog configuration they share.
// Checks of a group run in order on one watchdog; a check that needs a
// fresh pool comes first in its group.
func Groups() []Group {
	return []Group{
		{
			Name:  "default",
			Flags: []string{"-workers", "2"},
			Checks: []Check{
				// First: the fixture's request counters start at 1.
				{Name: "keep-alive-same-workers", Section: "2.1", Description: "twenty requests on one connection are served by the same two worker processes, the handshake never reaching the handler", Run: keepAliveSameWorkers},
				// Early: the peak RSS baseline must not include the large checks.
				{Name: "streaming-32mib-request", Section: "6.1", Description: "a 32 MiB request body streams through: /sha256 is right and the watchdog's peak RSS grows by far less than 32 MiB", Timeout: 60 * time.Second, Run: streaming32MiB},
				{Name: "ready-json", Section: "9.2", Description: "/_/ready answers 200 with the counts of workers by state and crash_looping", Run: readyJSON},
				{Name: "health-json", Section: "9.2", Description: "/_/health answers 200 with the counts of workers by state and crash_looping", Run: healthJSON},
				{Name: "metrics-own-listener", Section: "10.1", Description: "/metrics is served on a listener of its own (metrics_port 0: a free port, logged) that answers no other path, and /metrics on the function port reaches the function", Run: metricsOwnListener},
				{Name: "worker-environment", Section: "2.3", Description: "workers see AFTERBURN_PROTOCOL=1 and a worker id from 1 to workers", Run: workerEnvironment},
				{Name: "idle-most-recent-first", Section: "10.3", Level: "SHOULD", Description: "one request at a time is served by the worker that became idle last: a sequence by one worker, and a worker released later before one released earlier", Run: idleMostRecentFirst},
				{Name: "worker-process-group", Section: "2.1", Description: "every worker runs in a process group of its own", Run: workerProcessGroup},
				{Name: "echo", Section: "4.2", Description: "a request reaches the handler with its method, raw target, fields and body", Run: echo},
				{Name: "request-id-header", Section: "5.1", Description: "the response's AfterBurn-Request-Id is a fresh 32-hex id equal to the one the handler saw", Run: requestIDHeader},
				{Name: "x-request-id-reused", Section: "5.1", Description: "a valid client X-Request-Id becomes the request id", Run: xRequestIDReused},
				{Name: "x-request-id-invalid-replaced", Section: "5.1", Description: "an X-Request-Id with a space or of 129 characters is replaced by a fresh id", Run: xRequestIDInvalid},
				{Name: "client-afterburn-fields-stripped", Section: "5.3", Description: "client-supplied AfterBurn-* fields never reach the handler, and AfterBurn-Handshake does not make a handshake", Run: clientAfterBurnStripped},
				{Name: "hop-by-hop-request-fields", Section: "5.4", Description: "hop-by-hop fields and fields named in Connection are not forwarded to the worker", Run: hopByHopRequest},
				{Name: "hop-by-hop-response-fields", Section: "5.4", Description: "hop-by-hop fields and fields named in Connection from the worker do not reach the client", Run: hopByHopResponse},
				{Name: "response-afterburn-fields-stripped", Section: "4.4", Description: "AfterBurn-* fields of a function's response do not reach the client", Run: responseAfterBurnStripped},
				{Name: "multi-valued-request-fields", Section: "4.2", Description: "repeated request fields reach the handler as separate values in order", Run: multiValuedRequest},
				{Name: "multi-valued-response-fields", Section: "4.4", Description: "two Set-Cookie values of a response reach the client as two fields in order", Run: multiValuedResponse},
				{Name: "all-byte-values", Section: "4.2", Description: "a body of all 256 byte values reaches the handler unchanged", Run: allByteValues},
				{Name: "client-chunked-with-trailers", Section: "4.2", Description: "a client's chunked body and its trailer fields reach the handler", Run: clientChunkedTrailers},
				{Name: "trailers-both-ways", Section: "6.7", Description: "a chunked POST's trailer field reaches the handler and its Content-Length, Host, Content-Type and Authorization trailers do not; the handler's response trailer X-Fixture-Trailer: done, declared by the Trailer field, reaches the client", Run: trailersBothWays},
				{Name: "empty-post", Section: "4.2", Description: "a POST with Content-Length: 0 reaches the handler with an empty body", Run: emptyPost},
				{Name: "head-no-body", Section: "4.4", Description: "a HEAD response has no body and the connection stays usable", Run: headNoBody},
				{Name: "status-204", Section: "4.4", Description: "a 204 from the function has no body and the connection stays usable", Run: status204},
				{Name: "function-errors-pass-through", Section: "8.1", Description: "a function's own 404, 500 and 503 reach the client unchanged, without AfterBurn-Error", Run: functionErrorsPassThrough},
				{Name: "stream", Section: "6.1", Description: "/stream arrives chunked with the right content", Run: stream},
				{Name: "lockstep-flush-full-duplex", Section: "6.2", Description: "each line sent on a streaming request body comes back as a flushed chunk before the next line is sent", Run: lockstep},
				{Name: "full-duplex-4mib", Section: "6.2", Description: "4 MiB streamed through /lockstep, more than a pipe buffer each way, comes back unchanged", Timeout: 30 * time.Second, Run: fullDuplex4MiB},
				{Name: "echo-4mib", Section: "6.1", Description: "a 4 MiB body reaches the handler whole", Timeout: 30 * time.Second, Run: echo4MiB},
				{Name: "large-response", Section: "6.1", Description: "an 8 MiB response arrives whole with Content-Length and chunked", Timeout: 30 * time.Second, Run: largeResponse},
				{Name: "read-partial-then-next", Section: "6.3", Description: "after a handler reads 10 bytes of a 1 MiB body the next requests are clean and no worker is replaced", Run: readPartial},
				{Name: "concurrent-requests-queue", Section: "10.3", Description: "sixteen concurrent requests on two workers all get their own response", Run: concurrentQueue},
				{Name: "throw-handler-error", Section: "8.3", Description: "a handler that raises gives 500 handler_error with the request id and AfterBurn-Error, and the worker keeps serving", Run: throwHandlerError},
				{Name: "throw-mid-body", Section: "8.7", Description: "a handler that raises after its head leaves the client's body visibly incomplete", Run: throwMidBody},
				{Name: "crash-before-head", Section: "8.4", Description: "a worker exiting mid-request gives 502 worker_crashed, a restart with reason crashed, and the next request succeeds", Run: crashBeforeHead},
				{Name: "crash-after-head", Section: "8.7", Description: "a worker exiting after the response head leaves the client's body visibly incomplete", Run: crashAfterHead},
				{Name: "crash-after-response", Section: "9.3", Description: "a worker exiting after a complete response delivers it and the next requests succeed", Run: crashAfterResponse},
				{Name: "unread-request-retried", Section: "9.3", Description: "small requests sent at once after a worker exits following a complete response all get their own response: one the dying worker never read goes to another worker", Run: unreadRequestRetried},
				{Name: "kill-busy-worker", Section: "8.4", Description: "kill -9 of a busy worker under load fails only its request with 502; every other request gets its own response and the restart is counted", Timeout: 20 * time.Second, Run: killBusyWorker},
				{Name: "garbage-instead-of-response", Section: "8.5", Description: "a worker writing garbage instead of a response gives 502 bad_response and is replaced", Run: garbageInstead},
				{Name: "garbage-after-response", Section: "9.6", Description: "bytes after a complete response do not reach the next request; the worker is replaced for unsolicited_output (or, for a library that lists exchange, the token-less response is refused 502 bad_response first)", Run: garbageAfter},
				{Name: "exchange-late-writer", Section: "4.6", Description: "a whole response written by a worker thread after its handler returned never reaches the next request: it gets 502 bad_response (or, on a slow machine, its own answer from another worker) and later requests get their own", Timeout: 20 * time.Second, Run: lateWriter("late")},
				{Name: "exchange-late-child", Section: "4.6", Description: "a whole response written by a child process of the worker after the handler returned never reaches the next request", Timeout: 20 * time.Second, Run: lateWriter("child")},
				{Name: "underscore-field-names", Section: "5.5", Description: "X_Forwarded_For from a client neither replaces nor joins X-Forwarded-For in what the handler sees", Run: underscoreNames},
				{Name: "print-tagged-in-log", Section: "9.5", Description: "worker prints do not corrupt responses and reach the watchdog's stderr tagged with the worker id", Run: printTagged},
				{Name: "client-disconnect-mid-body", Section: "6.4", Description: "a client disconnecting in the middle of a chunked body gets the worker replaced (request_aborted) and the next requests succeed", Run: clientDisconnectMidBody},
				{Name: "buffered-body-client-gone", Section: "6.6", Description: "a client stalling, then leaving, half-way through a Content-Length body holds no worker meanwhile and costs no restart", Run: bufferedClientGone},
				{Name: "client-gone-mid-response", Section: "6.5", Description: "a client leaving in the middle of an 8 MiB response costs no worker: nothing is restarted and the next requests succeed", Timeout: 30 * time.Second, Run: clientGoneMidResponse},
				{Name: "expect-100-continue", Section: "5.4", Description: "Expect: 100-continue is answered 100 by the watchdog and not forwarded", Run: expect100Continue},
				{Name: "expect-other-417", Section: "5.4", Description: "an Expect other than 100-continue is answered 417", Run: expectOther417},
				{Name: "header-too-large-431", Section: "7.1", Description: "a request head over max_header_bytes is answered 431 with the §8.1 body, just over it and far over it", Run: headerTooLarge},
				{Name: "access-log", Section: "9.5", Description: "every request gets an access-log line with its request id, method, path without the query, and status", Run: accessLog},
				// Last: by now every kind of series has been touched.
				{Name: "metrics-names", Section: "10.4", Description: "/metrics exports every metric of §10.4 with its type and labels", Run: metricsNames},
			},
		},
		{
			Name:  "limits",
			Flags: []string{"-workers", "2", "-max_request_body", "1024"},
			Checks: []Check{
				{Name: "body-too-large-content-length", Section: "7.2", Description: "a Content-Length over max_request_body is answered 413 body_too_large without using a worker", Run: bodyTooLargeCL},
				{Name: "body-too-large-chunked", Section: "6.4", Description: "a chunked body crossing max_request_body is answered 413, the worker replaced (request_aborted) and the pool still serves", Run: bodyTooLargeChunked},
			},
		},
		{
			// PROTOCOL.md §2.6: each check starts a watchdog of its own in fork mode and
			// is skipped for a library that does not list fork.
			Name:    "fork",
			Manual:  true,
			OneLane: true,
			Checks: []Check{
				{Name: "fork-workers-from-template", Section: "2.6", Description: "with spawn=fork the template initialises once and both workers are its forks: children of the watchdog, in process groups of their own, running the template's program", Run: forkWorkersFromTemplate},
				{Name: "fork-crash-replaced-by-fork", Section: "2.6", Description: "a worker that crashes is replaced by a new fork of the template, not a new initialisation", Run: forkCrashReplacedByFork},
				{Name: "fork-template-crash", Section: "2.6", Description: "a template killed leaves the forked workers serving (the single fork's die with it under isolation=request); a new template starts and the restart is counted", Timeout: 20 * time.Second, Run: forkTemplateCrash},
				{Name: "fork-random-differs", Section: "2.6", Description: "two workers forked from one template draw different random numbers", Run: forkRandomDiffers},
				{Name: "fork-thread-refused", Section: "2.6", Description: "a template with a thread of its own running does not fork: the failure names the thread, and the slots fall back to exec and serve", Timeout: 20 * time.Second, Run: forkThreadRefused},
				{Name: "fork-recycle", Section: "2.6", Description: "the successor of a recycled worker is a fork of the template", Timeout: 20 * time.Second, Run: forkRecycle},
			},
		},
		{
			// PROTOCOL.md §2.7: each check starts a watchdog of its own with
			// -spawn fork -isolation request; a library that does not list
			// fork is refused at start, and the group is skipped.
			Name:    "isolation",
			Manual:  true,
			OneLane: true,
			Checks: []Check{
				{Name: "isolation-global-sequential", Section: "2.7", Description: "under isolation=request a global written by one request is not seen by the next on the same connection, each served by a fresh process", Run: isolationGlobalSequential},
				{Name: "isolation-global-concurrent", Section: "2.7", Description: "four requests at once, then four more, each writing a global: none sees another's, and eight processes served them", Timeout: 20 * time.Second, Run: isolationGlobalConcurrent},
				{Name: "isolation-tmpdir", Section: "2.7", Description: "a file one request writes to its TMPDIR is not in the next request's own, and the directory is removed once its worker is gone", Run: isolationTmpdir},
				{Name: "isolation-random-differs", Section: "2.7", Description: "requests draw different random numbers", Run: isolationRandom},
				{Name: "isolation-warm-up-unseen", Section: "2.7", Description: "each request is the first call of the function in its process: a spare's warm-up never reaches the function", Run: isolationWarmUpUnseen},
				{Name: "isolation-faults-cost-only-their-request", Section: "2.7", Description: "a crash (502) and a timeout (504) each fail only their own request; the requests around them are answered", Timeout: 20 * time.Second, Run: isolationFaultsCostOnlyTheirRequest},
				{Name: "isolation-leftovers-reported", Section: "2.7", Description: "a daemon a request leaves behind is logged with the request id, counted in afterburn_isolation_leftovers_total and killed", Timeout: 20 * time.Second, Run: isolationLeftoversReported},
				{Name: "isolation-worker-forks-and-exits", Section: "2.7", Description: "a child a request leaves in its worker's process group is logged with the request id, counted and killed once the worker exits", Timeout: 20 * time.Second, Run: isolationWorkerForksAndExits},
				{Name: "isolation-template-killed", Section: "2.6", Description: "the template killed with spares alive: no spare is left unsupervised or a zombie, the template comes back, requests are answered", Timeout: 20 * time.Second, Run: isolationTemplateKilled},
				{Name: "fork-child-pid-held", Section: "2.6", Description: "a worker of the single fork names the temporary directory it made in the root in its handshake reply (§2.7); once it exits it is reported and stays a zombie of the template until reap <pid>, then is reaped; a reap of any other pid ends the template non-zero", Timeout: 20 * time.Second, Run: forkChildPidHeld},
				{Name: "fork-child-unasked", Section: "2.6", Description: "a template listing unasked-handshake, sent fork-child <slot> unasked, has its worker write its handshake reply (naming its temporary directory, §2.7) with no handshake request written to it; the worker then serves and exits at EOF", Timeout: 20 * time.Second, Run: forkChildUnasked},
			},
		},
		{
			// PROTOCOL.md §2.5: each check starts a watchdog of its own with -lanes
			// and is skipped for a library served on fewer lanes than it needs.
			Name:   "lanes",
			Manual: true,
			Checks: []Check{
				{Name: "lanes-overlap", Section: "2.5", Description: "four /sleep?ms=500 on one worker with four lanes run at once on the same process, well under 2 s in all", Run: lanesOverlap},
				{Name: "lanes-crash-fails-only-its-own", Section: "2.5", Description: "with two workers of three lanes, a crash fails exactly the crashed worker's exchanges in flight, each with its own 502 worker_crashed, and none of the other worker's", Timeout: 20 * time.Second, Run: lanesCrashFailsOnlyItsOwn},
				{Name: "lanes-deadline-cancel", Section: "2.5", Description: "an exchange past its deadline gets 504 and is cancelled in the library; its late response is drained and reaches no client; the worker is not replaced and another lane's exchange is undisturbed", Timeout: 20 * time.Second, Run: lanesDeadlineCancel},
				{Name: "lanes-ignored-cancel-stuck", Section: "2.5", Description: "a handler ignoring its cancellation past cancel_grace gets its worker retired make-before-break (restart reason stuck) while another lane's exchange finishes 200", Timeout: 20 * time.Second, Run: lanesIgnoredCancelStuck},
				{Name: "lanes-slow-reader", Section: "2.5", Description: "a client not reading a 64 MiB response (response_buffering off) does not slow requests on the worker's other lanes", Timeout: 20 * time.Second, Run: lanesSlowReader},
				{Name: "lanes-log-attributable", Section: "2.5", Level: "SHOULD", Description: "a line written through the library's per-request logger carries the request id", Run: lanesLogAttributable},
				{Name: "lanes-auto", Section: "2.5", Description: "under lanes=auto (the default) the first worker is offered 16 lanes in AFTERBURN_STREAM_OFFER_FDS, never AFTERBURN_STREAM_FDS, and is served on as many as its library prefers, at once; its successor is offered exactly that many, no lane variable for one; under spawn=fork no offer", Timeout: 20 * time.Second, Run: lanesAuto},
				{Name: "lanes-ready-metrics", Section: "2.5", Description: "/_/ready has lane counts by state and /metrics has afterburn_lanes{state}, afterburn_lane_cancels_total and afterburn_late_responses_discarded_total", Run: lanesReadyMetrics},
			},
		},
		{
			// PROTOCOL.md §8.6 with one lane: each check starts watchdogs of its own.
			Name:    "cancel",
			Manual:  true,
			OneLane: true,
			Checks: []Check{
				{Name: "deadline-cancel-before-kill", Section: "8.6", Description: "one lane: /wait-cancel past exec_timeout 500ms gets 504 at the deadline, the handler observes its cancellation and, when the library lists exchange, the worker is kept (same pid, no restart) within cancel_grace 2s; /ignore-cancel with cancel_grace 1s keeps its worker busy in /_/ready during the grace (§9.2) and has it killed after it, restart reason timeout", Timeout: 30 * time.Second, Run: deadlineCancelBeforeKill},
			},
		},
		{
			// PROTOCOL.md §9.5: a watchdog of its own with -log_format json.
			Name:   "logs",
			Manual: true,
			Checks: []Check{
				{Name: "json-logs", Section: "9.5", Description: "with log_format json every log line is a JSON object with time, level and msg; the line /log writes through the library's request logger has the request id and the text (quotes, backslash, non-ASCII) as msg, merged with worker, pid and stream; the request's access line has msg access", Run: jsonLogs},
				{Name: "json-logs-bad-setting", Section: "9.5", Description: "with log_format json a setting that does not parse (-workers many) is one JSON line with level error naming it, nothing else, and exit status 2", Run: jsonLogsBadSetting},
			},
		},
		{
			Name:       "recycling",
			Flags:      []string{"-workers", "2", "-max_requests", "10"},
			Persistent: true,
			Checks: []Check{
				{Name: "recycle-under-load", Section: "9.7", Description: "with max_requests 10, 160 requests from four clients get workers recycled and every one gets its own response", Timeout: 30 * time.Second, Run: recycleUnderLoad},
			},
		},
		{
			// PROTOCOL.md §10.5: heads the watchdog rejects itself. A small
			// header limit keeps the 431 bound small; read_timeout is short
			// for the slowloris check.
			Name:  "hostile-clients",
			Flags: []string{"-workers", "1", "-max_header_bytes", "1024", "-read_timeout", "1s"},
			Checks: []Check{
				{Name: "reject-bare-lf", Section: "10.5", Description: "a head with a line ended by a bare LF is answered 400 bad_request with the §8.1 body and Connection: close, the connection closes and the rejection is counted", Run: guardBareLF},
				{Name: "reject-obs-fold", Section: "10.5", Description: "a head with an obs-fold field line is answered 400 bad_request and the connection closes", Run: guardObsFold},
				{Name: "reject-content-length-with-transfer-encoding", Section: "10.5", Description: "Content-Length with Transfer-Encoding, in either order, is answered 400 bad_request and the request smuggled in its body is never answered", Run: guardCLAndTE},
				{Name: "reject-transfer-encoding-http10", Section: "10.5", Description: "Transfer-Encoding in an HTTP/1.0 request is answered 400 bad_request and the connection closes", Run: guardTEHTTP10},
				{Name: "reject-content-length-malformed", Section: "10.5", Description: "a repeated Content-Length (equal values), a list, a sign, inner space, hex or an overflow is answered 400 bad_request", Run: guardContentLength},
				{Name: "reject-after-pipelined-requests", Section: "10.5", Description: "two valid pipelined requests are answered before the 400 for the obs-folded head after them, then the connection closes", Run: guardPipelined},
				{Name: "reject-head-past-bound-431", Section: "10.5", Description: "a head far past max_header_bytes + 4096 is answered 431 headers_too_large with the §8.1 body", Run: guardHeadFarTooLarge},
				{Name: "reject-bad-chunk-size", Section: "10.5", Description: "a chunk-size line that is not 1-16 hex digits is answered 400 bad_request, the worker is replaced (request_aborted) and the pool still serves", Run: guardBadChunk},
				{Name: "slowloris-head", Section: "10.5", Description: "a head sent a byte at a time, on a new connection and on a kept-alive one, is answered 408 request_timeout with Connection: close read_timeout after its first byte, counted and access-logged, and reaches no handler", Timeout: 15 * time.Second, Run: guardSlowlorisHead},
				{Name: "idle-connection-closed", Section: "10.5", Description: "a connection on which nothing is sent is closed at read_timeout without a response, and no rejection is counted", Timeout: 15 * time.Second, Run: guardIdleClosed},
				{Name: "server-rejects-malformed-fields", Section: "8.1", Description: "NUL or CR in a field value, no Host, two Host lines are answered 400 and Transfer-Encoding: gzip, chunked 501, each on a closing connection", Run: serverRejectsFields},
			},
		},
		{
			Name:  "timeout",
			Flags: []string{"-workers", "2", "-exec_timeout", "1s"},
			// §2.5, §8.6: with lanes /ignore-cancel?ms=5000, which ignores its
			// cancellation, is drained when it ends, within the grace.
			LaneFlags: func(int) []string { return []string{"-cancel_grace", "5s"} },
			Checks: []Check{
				{Name: "deadline-visible", Section: "5.2", Description: "the handler sees a deadline of at most exec_timeout and more than 0 ms away", Run: deadlineVisible},
				{Name: "exec-timeout", Section: "8.6", Description: "a request past exec_timeout gets 504 timeout at the deadline, a handler ignoring its cancellation has its worker replaced after cancel_grace (timeout; with lanes, §2.5, the exchange is cancelled and its lane drained instead), and later requests get their own responses", Run: execTimeout},
				{Name: "hang-after-head", Section: "8.6", Description: "a worker writing half a response and hanging is killed once cancel_grace has passed after the deadline: the body ends visibly incomplete at the deadline, the restart is counted as timeout and later requests succeed", Timeout: 20 * time.Second, Run: hangAfterHead},
				{Name: "crash-mid-body", Section: "8.4", Description: "a worker exiting while reading a 256 KiB body gives 502 worker_crashed, a restart counted as crashed, and later requests succeed", Run: crashMidBody},
				{Name: "exit-zero-mid-request", Section: "8.4", Description: "a worker exiting with status 0 in the middle of a request gives 502 worker_crashed and a restart counted as crashed", Run: exitZeroMidRequest},
			},
		},
		{
			Name:  "single",
			Flags: []string{"-workers", "1", "-max_inflight", "2", "-exec_timeout", "1s"},
			// §2.5: a request queues only when every lane is busy, so with K
			// lanes max_inflight must leave room for K running and one queued.
			// /ignore-cancel?ms=4000 on every lane drains within cancel_grace.
			LaneFlags: func(k int) []string {
				return []string{"-max_inflight", strconv.Itoa(k + 1), "-cancel_grace", "5s"}
			},
			// A slow start makes the replacement of a killed worker slower
			// than a queued request's deadline: an initialisation, or in fork
			// mode, where a replacement is a fork, its after-fork hook (§2.6).
			Env: map[string]string{"FIXTURE_INIT_SLEEP_MS": "1000", "FIXTURE_AFTER_FORK_SLEEP_MS": "1000"},
			Checks: []Check{
				{Name: "max-inflight-429", Section: "10.3", Description: "with max_inflight requests held (every lane busy, the rest queued, §2.5), one more is answered 429 overloaded at once", Run: maxInflight},
				{Name: "queued-past-deadline", Section: "5.2", Description: "a request whose deadline passes while queued is answered 504 timeout without reaching a worker", Timeout: 20 * time.Second, Run: queuedPastDeadline},
			},
		},
		{
			Name:  "banner",
			Flags: []string{"-workers", "1"},
			Env:   map[string]string{"FIXTURE_BANNER": "HTTP/1.1 200 OK banner-fd"},
			Checks: []Check{
				{Name: "banner-fd-mode", Section: "2.4", Description: "a start-up banner on stdout in fd mode corrupts nothing and is logged", Run: bannerFD},
			},
		},
		{
			Name:     "stdio",
			ExecOnly: true,
			OneLane:  true,
			Flags:    []string{"-workers", "1", "-stdio"},
			Env:      map[string]string{"FIXTURE_BANNER": "banner-stdio"},
			Checks: []Check{
				{Name: "stdio-mode", Section: "2.2", Description: "in stdio mode a banner and prints do not corrupt the protocol", Run: stdioMode},
			},
		},
		{
			Name:   "lifecycle",
			Manual: true,
			Checks: []Check{
				{Name: "init-failure-crash-loop", Section: "9.1", Description: "failing initialisation makes slots crash-looping, /_/ready 503 and requests 503 unavailable, until init succeeds again", Timeout: 30 * time.Second, Run: initFailureCrashLoop},
				{Name: "init-timeout", Section: "3.5", Description: "a worker slower than init_timeout to answer the handshake is killed with reason init_timeout", Timeout: 15 * time.Second, Run: initTimeout},
				{Name: "sigterm-graceful", Section: "9.4", Description: "on SIGTERM an in-flight request completes, its response saying Connection: close, and the watchdog exits 0", Timeout: 20 * time.Second, Run: sigtermGraceful},
				{Name: "sigterm-under-load", Section: "9.4", Description: "on SIGTERM two running and six queued requests (with lanes, §2.5: up to eight running) all complete with their own responses and the watchdog exits 0", Timeout: 20 * time.Second, Run: sigtermUnderLoad},
				{Name: "sigterm-grace-over", Section: "9.4", Description: "with -workers 1 -shutdown_timeout 1s, a request sleeping 5 s on each lane and one queued behind them at SIGTERM are all answered 503 unavailable with Connection: close when the grace period ends, and the watchdog exits 0", Timeout: 20 * time.Second, Run: sigtermGraceOver},
				{Name: "no-inherited-descriptors", Section: "2.2", Description: "a descriptor the watchdog inherited without close-on-exec is open in no worker process", Timeout: 20 * time.Second, Run: inheritedDescriptor},
				{Name: "pdeathsig", Section: "2.1", Level: "SHOULD", Description: "workers die when the watchdog is killed with SIGKILL", Timeout: 15 * time.Second, Run: pdeathsig},
			},
		},
	}
}
