package dev.afterburn.runtime;

/**
 * The user's function: called once per request. With one lane, one request at a time on the
 * worker's serving thread. With lanes (PROTOCOL.md §2.5, watchdog {@code -lanes K}) the
 * <b>same handler object is called from several threads at once</b>, one per lane: it must
 * be thread-safe, and what it shares (caches, connections, counters) must be too; a
 * connection pool sized to the lanes fits well. Each call has its own {@link Request},
 * with its own request id, deadline, cancellation ({@link Request#cancelled()}) and
 * per-request log ({@link Request#log(String)}).
 *
 * <pre>{@code
 * AfterBurn.serve(request -> Response.ok()
 *         .header("Content-Type", "text/plain")
 *         .body("hello " + request.query() + " (request " + request.requestId() + ")\n"));
 * }</pre>
 *
 * <p>An exception thrown here is answered {@code 500} with the JSON error body of
 * PROTOCOL.md §8.1 (type {@code handler_error}); the exception and its stack go to stderr,
 * never to the client, and the worker keeps serving.
 */
@FunctionalInterface
public interface Handler {
    /**
     * Handles one request.
     *
     * @param request the request; its body may be read until the response ends
     * @return the response, never null
     * @throws Exception any failure, answered 500 {@code handler_error}
     */
    Response handle(Request request) throws Exception;
}
