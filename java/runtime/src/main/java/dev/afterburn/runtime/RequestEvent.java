package dev.afterburn.runtime;

/**
 * What the core makes of the request stream, in stream order: a head, its body in pieces,
 * the end of the body, and at last either a clean end of the stream or a failure.
 */
sealed interface RequestEvent {

    /**
     * A checked request head. {@code requestId} is null when the watchdog sent none,
     * {@code timeoutMs} is -1 without a deadline, {@code handshake} is the offered version
     * list when the request is a handshake (§3.1), else null. {@code exchange} is the
     * request's AfterBurn-Exchange token (§4.6), or null; it is the library's, for the
     * response head, and never reaches the handler.
     */
    record Head(String method, String target, Headers headers, String requestId, long timeoutMs,
                String handshake, String exchange, long headReadNanos) implements RequestEvent {}

    /**
     * De-chunked body bytes, never empty: {@code array[offset, offset+length)}, a view on the
     * buffer the bytes were read into, not a copy. It stays valid until the second
     * {@link RequestDecoder#feed} after the one that produced it: the reader of the stream
     * consumes it before it feeds more, and the feeder reuses a buffer only every other read.
     */
    record Content(byte[] array, int offset, int length) implements RequestEvent {
        /** A copy of the bytes. */
        byte[] bytes() {
            return java.util.Arrays.copyOfRange(array, offset, offset + length);
        }
    }

    /** The end of a request body, with the trailer fields of a chunked body. */
    record End(Headers trailers) implements RequestEvent {}

    /**
     * A framing error (§8.8); nothing follows it. {@code requestId} and {@code exchange} are
     * those of the request it was found in, when known (null otherwise); the token only when
     * that request's head was read to its end (§4.6).
     */
    record Failure(ProtocolError error, String requestId, String exchange) implements RequestEvent {}

    /** The stream ended between two requests (§9.4); nothing follows it. */
    record Closed() implements RequestEvent {}
}
