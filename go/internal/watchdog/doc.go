// Package watchdog is the host side of AfterBurn/1 (spec/PROTOCOL.md): it
// serves HTTP, keeps a pool of long-lived worker processes and carries each
// request to an idle worker as HTTP/1.1 bytes on a pipe. The worker side is
// the library in each language; nothing here assumes which one runs in the
// worker.
//
// # The map
//
// One package per concept; a package imports only packages of a lower layer
// (layout_test.go holds the layers and fails on an import that climbs).
//
//	layer 6  watchdog  Watchdog, New, Run: listeners, serving, /_/ routes,
//	                   shutdown (§9.4), the §9.3 retry on another worker
//	layer 5  exchange  one request carried by one lane: head and body out,
//	                   response in, hijack and splice, deadlines and drains
//	layer 4  pool      slots, supervisors, dispatch, recycling, readiness,
//	                   shutdown; the one owner of worker and lane state
//	layer 3  spawn     how a worker comes to exist: exec, fork from a
//	                   template (the double fork, or under isolation the
//	                   single fork, whose workers stay the template's
//	                   children), isolation's temporary directories
//	         front     the watchdog's own HTTP/1.1 server for plain requests
//	                   (§10.6); hands every other connection to net/http
//	layer 2  worker    a process and its lanes' pipes, handshake, cancel pipe
//	         buffer    request bodies read first (§6.6), responses held for
//	                   slow clients (§6.1), the spill budget
//	         guard     the client bytes' check before net/http (§10.5)
//	layer 1  obs       logs (text and JSON) and metrics; gauges read through
//	                   a small interface of plain types
//	layer 0  wire      the protocol's vocabulary: response heads, tokens,
//	                   trailers, error types, restart reasons, control codec,
//	                   hop-by-hop rules
//	         config    settings, flags and environment (§10.2)
//	         proc      start, reap, leftovers, close-on-exec, pipe sizes
//	         rawio     the hot path's reads and writes (lanes' pipes, client
//	                   sockets): raw system calls inside the runtime's poller
//
// internal/testworker is the worker every package's tests run: the test
// binary itself, started with AFTERBURN_TEST_CHILD set.
//
// Cold seams are interfaces (spawn.Spawner, the gauges obs reads); the hot
// path is concrete: an exchange holds a *pool.Lease, whose lane's pipes and
// buffers it uses directly. Lock order: the pool's mutex before a spawner's
// own (a spawner never takes the pool's: it gets spawn.Env's callbacks).
//
// # One request, from accept to access log
//
//  1. guard.Listener wraps each client connection in a guard.Conn, which
//     checks every head byte before net/http reads it (§10.5): a head it
//     rejects reaches serveRejected as a stand-in request, answered 400/431.
//  2. The front (§10.6) reads a plain HTTP/1.1 head itself, fills a
//     reused *http.Request and calls Watchdog.ServeHTTP (handler.go) with a
//     ResponseWriter of its own; any other head, and the connection with
//     it, goes to net/http (front.Handoff), which parses it and calls the
//     same ServeHTTP. /_/health, /_/ready and /metrics are answered there;
//     anything else goes to serveFunction, which starts the access-log
//     entry.
//  3. serveFunction applies §7's limits, reads a body of known length whole
//     when request buffering is on (buffer.RequestBuffers, §6.6), enters the
//     pool (max_inflight, §10.3) and acquires a lane: pool.Acquire returns a
//     *pool.Lease at once or after its turn in the FIFO queue.
//  4. exchange.Exchange.Begin and Run: the head goes to the lane's request
//     pipe with §4.2 and §5's edits and the exchange token (§4.6), the body
//     inline, streamed or spliced (hijack.go); the response head is parsed
//     once (wire.RespHead) and forwarded (§4.4, §5.1), the body through a
//     buffer.RespBuffer when the client is slower than the worker (§6.1).
//     A deadline that passes cancels the exchange and drains its lane
//     (§8.6, §2.5).
//  5. pool.Release gives the lane back (laneTo, workerTo), or, with a
//     restart reason, retires the worker to its supervisor, which replaces
//     it through the spawner; a worker with several lanes is replaced
//     make-before-break (§2.5).
//  6. A worker that died without reading a byte of the request sends it back
//     to serveFunction, which carries it once more on another lane (§9.3).
//  7. serveFunction's deferred function writes the access line and counts the
//     request (obs).
//
// # The life of a worker
//
// A slot's supervisor (pool/supervisor.go) asks the spawner for a worker,
// wraps it in a pool.Member (starting) and sends the handshake (§3). Every
// change of a worker's or a lane's state afterwards goes through
// pool.workerTo or pool.laneTo, along these tables (pool/state.go; a pair not
// listed is refused and logged as bad_transition, and state_test.go walks
// every pair):
//
//	worker    handshook  offer  withdraw  park    unpark  drain     retire
//	starting  busy       -      -         -       -       -         retired
//	idle      -          idle   busy      parked  -       draining  retired
//	busy      -          idle   -         parked  -       draining  retired
//	draining  -          -      -         -       -       draining  retired
//	parked    -          -      -         parked  busy    draining  retired
//	retired   -          -      -         -       -       -         -
//
//	lane      take  end   late      close
//	free      busy  -     -         closed
//	busy      -     free  draining  -
//	draining  -     free  -         -
//	closed    -     -     -         -
//
// Idle means in the idle list with a free lane; busy, out of it (every
// serving lane taken, or a liveness check); parked, waiting for its
// successor (§2.5 fault, §9.7 RSS); draining, on its way out with EOF on its
// lanes (§9.4, §9.7); retired, back with its supervisor, which replaces it
// or, at shutdown, lets it end.
package watchdog
