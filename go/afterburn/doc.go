// Package afterburn runs a net/http handler as an AfterBurn function: a long-lived
// worker process that an AfterBurn watchdog starts once and then feeds requests, as
// HTTP/1.1 on a pipe, for as long as it lives. Start-up cost — loading a model,
// building a table, opening a pool — is paid once, not per request.
//
// This is the worker side of the protocol in spec/PROTOCOL.md ("AfterBurn/1"); the
// watchdog is the host side. The package is to AfterBurn what net/http/cgi's Serve is
// to CGI:
//
//	func main() {
//		table := buildTable() // expensive, done once
//		http.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
//			fmt.Fprintf(w, "hello %s (request %s)\n", table.lookup(r), afterburn.RequestID(r))
//		})
//		if err := afterburn.Serve(nil); err != nil {
//			log.Fatal(err)
//		}
//	}
//
// Serve returns nil when the watchdog shuts the worker down, so the process exits 0;
// do not write log.Fatal(afterburn.Serve(h)), which would exit 1 then.
//
// # What handlers see
//
// Handlers get an ordinary *http.Request and http.ResponseWriter:
//
//   - r.RequestURI is the request-target exactly as the client sent it; r.URL is parsed
//     from it without normalisation. r.Host is the client's Host. r.RemoteAddr is
//     empty: the worker is not on the network (the watchdog is).
//   - r.Header holds every field the client sent, repeated fields in order, except
//     Host, Transfer-Encoding (see r.TransferEncoding) and the watchdog's
//     AfterBurn-Request-Id and AfterBurn-Timeout-Ms, whose meaning is exposed by
//     RequestID and the context deadline instead, and AfterBurn-Exchange (below).
//   - r.Body streams the request body as the watchdog writes it, de-chunked, and stays
//     readable while the response is written (full duplex). Trailers of a chunked
//     request are in r.Trailer once r.Body has returned io.EOF. What the handler does
//     not read is discarded after it returns. io.Copy(w, r.Body) moves the body in
//     large pieces, and on Linux, when the handler set the response's Content-Length,
//     without copying it at all: the kernel splices it from the request pipe to the
//     response pipe.
//   - r.Context() carries the deadline, AfterBurn-Timeout-Ms after the request head
//     was read, on the monotonic clock, and is cancelled 50 ms after the deadline
//     (PROTOCOL.md §5.2: the watchdog answers the client 504 at the deadline, first),
//     when the watchdog cancels the request (see Lanes) and when the handler returns.
//     TimeRemaining gives the time left.
//
// The ResponseWriter holds up to 16 KiB of body until the handler flushes or returns:
// a handler that returns first is answered with Content-Length; otherwise the body is
// chunked and each Flush (http.Flusher, or http.NewResponseController(w).Flush) sends
// what was written so far as one chunk, so server-sent events and token streams reach
// the client as they are produced. A Content-Length set by the handler is used and enforced.
// Trailers work as in net/http: declare them in the Trailer header, or set keys
// prefixed with http.TrailerPrefix. Responses to HEAD, 204 and 304 carry no body, and
// 1xx statuses are not sent (the watchdog handles 100-continue).
//
// A handler that panics before any byte of its response was sent is answered 500 with
// the JSON error body of the protocol (type handler_error, no panic message); the panic
// and its stack go to stderr, prefixed with the request id, and the worker keeps
// serving. A panic after the response started cannot change its status: Serve leaves
// the response visibly incomplete and returns an error, so the worker exits and the
// watchdog replaces it.
//
// # Exchange tokens
//
// The watchdog gives every request an AfterBurn-Exchange token, and accepts a response
// only if its head carries the same token (PROTOCOL.md §4.6). This keeps bytes that
// code of the worker writes to the response pipe on its own — a goroutine still
// writing after its handler returned, a child process the handler started — from
// being delivered to another client as that client's response: the worker is
// replaced instead. It is automatic: the library copies the token into the head of
// every response it writes, errors and handshake replies included, keeps it out of
// r.Header, and drops a field of that name that a handler sets itself. What it cannot
// catch are stray bytes that land inside a response whose head already went out, such
// as the middle of a streamed body: they become part of that body, and either break
// its framing (the client sees an incomplete response) or reach that client. So only
// the library should ever write to the response pipe.
//
// # Stdout and stdin
//
// User code must not be able to corrupt the protocol by printing. Under a current
// watchdog the protocol runs on descriptors 3 and 4 (AFTERBURN_FDS=3,4) and stdout is
// a log pipe, so printing is always safe. In the watchdog's stdio mode
// (AFTERBURN_FDS=0,1) the protocol is on stdin and stdout: the package's init moves
// it to private descriptors and points fd 1 at stderr and fd 0 at /dev/null before
// main runs, so every later print — fmt.Println, os.Stdout, a C library's printf —
// goes to stderr. Without AFTERBURN_FDS (a legacy watchdog) the package cannot tell a
// worker from any other program that imports it, so Serve does this when it starts:
// there, print nothing to stdout before calling Serve.
//
// # Limits and errors
//
// The request parser is strict (PROTOCOL.md §4.3) and enforces the limits the watchdog
// passes in AFTERBURN_MAX_HEADER_BYTES (plus 1024 bytes for the watchdog's own fields)
// and AFTERBURN_MAX_BODY_BYTES, as bytes arrive. A request that breaks a rule is
// answered with its error status and JSON body, and Serve returns the error: the
// stream cannot be trusted any more, and the watchdog replaces the worker. (With lanes
// the stream is that lane's: see below.)
//
// # Fork mode
//
// The watchdog can fork every worker from one initialised template (-spawn fork,
// PROTOCOL.md §2.6). This package does not list the fork capability, and with -spawn
// fork the watchdog starts Go workers the usual way (it logs that the library cannot
// fork): the Go runtime runs threads of its own from before main (the scheduler's, the
// garbage collector's), and fork copies only the calling one. A Go worker starts in
// milliseconds; several requests in flight in one process come with lanes (below).
//
// # Lanes
//
// A worker carries one request at a time unless it has lanes (PROTOCOL.md §2.5). The
// operator can give every worker lanes:
//
//	afterburn-watchdog -lanes 32 -- ./myfunction
//
// or, under the watchdog's default (lanes=auto), the function asks for them: the
// watchdog offers each worker lanes and serves as many as the worker prefers,
// PreferredLanes(n), or AFTERBURN_GO_PREFERRED_LANES=n in the worker's environment,
// which wins. The default preference is 1: a Go function serves one request at a
// time until it says otherwise. Later workers are offered what the first one took.
//
// A lane is a pair of pipes that carries one request at a time. Serve serves each lane
// in a goroutine of its own, so up to 32 requests run in one process at once, and a
// handler waiting on a database, or a client slow to read its response, holds its
// own lane only. Go's runtime cannot be forked (above), so lanes are how one
// initialised Go process serves several requests at once: what it loaded at start-up
// is in memory once for all of them. Nothing in the function changes, but the handler
// is called concurrently, as under net/http: the http.Handler and whatever requests
// share (package variables, caches, clients) must be safe for concurrent use. A
// CPU-bound handler does not stall the other lanes (the Go scheduler preempts it);
// handlers run in parallel up to GOMAXPROCS and share the CPUs.
//
// GOMAXPROCS: a worker serving one lane in a process whose GOMAXPROCS is 1 (what Go
// chooses under a one-CPU limit) raises it to 2 while Serve runs. The lane waits for
// each request in a read(2), and with no idle processor the runtime takes the
// processor from such a read after 20 µs and keeps a monitor thread waking every 20 µs
// on the worker's one CPU; with a second, idle processor it does neither (at c=8 behind
// the watchdog, two workers on one CPU answered 1.5 times as many requests). The second
// processor runs Go code only when the handler starts goroutines of its own. A
// GOMAXPROCS set in the environment is left as it is.
//
// The worker tells the watchdog in its handshake how many lanes it serves at most,
// 1024 by default, and serves min(that, -lanes), or min(that, the offer, its
// preference); Serve(h, afterburn.MaxLanes(n)) lowers it. It closes the pipes of the
// lanes it does not serve before it answers the handshake. Nothing needs enabling in
// the function for -lanes: the same binary serves one lane under a watchdog started
// with -lanes 1.
//
// Cancellation: the watchdog does not kill a worker whose request passed its deadline
// at once. It answers the client 504 and gives the worker -cancel_grace (1s by
// default) to end the late response, which it discards; the library cancels the
// request's context 50 ms after the deadline, with one lane as with several, and with
// lanes the watchdog also tells the library, which cancels it then. So a handler
// should pass r.Context() to whatever it waits on (a query, an outgoing request) and
// return soon after the context is done: the worker then lives on. A handler that
// ignores the context keeps its lane busy until it returns, and the watchdog kills the
// worker (with lanes, replaces it) once the grace has passed. A cancellation never
// reaches the lane's next request.
//
// Logging: with several requests in flight, lines on stderr are attributable only if
// they say which request wrote them. Logf(r, format, args...) writes
// "[request-id] text" to stderr in one write, so lines of concurrent requests do not
// interleave.
//
// A fault on one lane — a request it cannot parse, a handler that panicked after its
// response started — closes that lane only: its other lanes serve on while the
// watchdog starts a successor, and Serve returns the error once every lane has ended.
package afterburn
