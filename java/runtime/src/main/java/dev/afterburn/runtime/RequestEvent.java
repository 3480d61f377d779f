package dev.afterburn.runtime;

/**
 * What the core makes of the request stream, in stream order: a head, its body in pieces,
 * the end of the body, and at last either a clean end of the stream or a failure.
 */
sealed interface RequestEvent {

    /**
     * A checked request head. {@code requestId} is null when the watchdog sent none,
     * {@code timeoutMs} is -1 without a deadline, {@code handshake} is the offered version
     * list when the request is a handshake (§3.1), else null.
     */
    record Head(String method, String target, Headers headers, String requestId, long timeoutMs,
                String handshake, long headReadNanos) implements RequestEvent {}

    /** De-chunked body bytes, never empty. */
    record Content(byte[] bytes) implements RequestEvent {}

    /** The end of a request body, with the trailer fields of a chunked body. */
    record End(Headers trailers) implements RequestEvent {}

    /** A framing error (§8.8); nothing follows it. */
    record Failure(ProtocolError error, String requestId) implements RequestEvent {}

    /** The stream ended between two requests (§9.4); nothing follows it. */
    record Closed() implements RequestEvent {}
}
