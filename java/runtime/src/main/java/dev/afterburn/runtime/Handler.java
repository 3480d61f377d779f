package dev.afterburn.runtime;

/**
 * The user's function: called once per request, one request at a time, on the worker's
 * serving thread.
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
