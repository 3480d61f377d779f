package dev.afterburn.runtime;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;

/**
 * One request, as the watchdog forwarded it (PROTOCOL.md §4.2).
 *
 * <p>Method, target, path and query are exactly as the client sent them: not decoded, not
 * normalised. {@link #headers()} holds every field in order, repeated fields once per line,
 * except {@code AfterBurn-Request-Id} and {@code AfterBurn-Timeout-Ms}, whose meaning is
 * exposed by {@link #requestId()} and {@link #timeRemaining()} instead (§5.3).
 *
 * <p>The body streams as the watchdog writes it, de-chunked: read it with {@link #body()}
 * with bounded memory, or take it whole with {@link #bodyBytes()} when it is small. What
 * the handler does not read is discarded after the response (§6.3). The body stays
 * readable while a streamed response is written (§6.2) and not after the exchange ended.
 */
public final class Request {
    private final String method;
    private final String target;
    private final Headers headers;
    private final String requestId;
    private final long deadlineNanos; // System.nanoTime() at the deadline
    private final boolean hasDeadline;
    private final BodyInputStream body;

    Request(String method, String target, Headers headers, String requestId, long headReadNanos,
            long timeoutMs, BodyInputStream body) {
        this.method = method;
        this.target = target;
        this.headers = headers;
        this.requestId = requestId;
        this.hasDeadline = timeoutMs >= 0;
        this.deadlineNanos = hasDeadline ? headReadNanos + timeoutMs * 1_000_000 : 0;
        this.body = body;
    }

    /** @return the request method, such as {@code GET} */
    public String method() {
        return method;
    }

    /** @return the request-target exactly as sent, such as {@code /orders?dry=1} */
    public String target() {
        return target;
    }

    /** @return the raw path of the target, before {@code ?}, not percent-decoded */
    public String path() {
        int q = target.indexOf('?');
        return q < 0 ? target : target.substring(0, q);
    }

    /** @return the raw query after the first {@code ?}, without it; empty when there is none */
    public String query() {
        int q = target.indexOf('?');
        return q < 0 ? "" : target.substring(q + 1);
    }

    /** @return every field of the request, in order (§4.2), without the reserved ones (§5.3) */
    public Headers headers() {
        return headers;
    }

    /**
     * The request id (PROTOCOL.md §5.1): the watchdog's {@code AfterBurn-Request-Id}, which
     * it also returns to the client and writes in its access log. Under a watchdog that sends
     * none (§11.1) the library makes one, 32 lower-case hex digits.
     *
     * @return the request id
     */
    public String requestId() {
        return requestId;
    }

    /** @return whether the watchdog set a deadline for this request (§5.2) */
    public boolean hasDeadline() {
        return hasDeadline;
    }

    /**
     * The time left before the deadline, never negative: the moment the request head was
     * read plus the watchdog's {@code AfterBurn-Timeout-Ms}, on the monotonic clock (§5.2).
     * Without a deadline it is the largest {@link Duration}, so a check such as
     * {@code timeRemaining().compareTo(need) < 0} needs no special case.
     *
     * @return the time left
     */
    public Duration timeRemaining() {
        if (!hasDeadline) return Duration.ofSeconds(Long.MAX_VALUE, 999_999_999);
        long left = deadlineNanos - System.nanoTime();
        return Duration.ofNanos(Math.max(left, 0));
    }

    /**
     * The body as a stream, de-chunked, read as it arrives. A request whose framing breaks
     * in the body fails the read with an {@link IOException}; let it propagate, and the
     * library answers the framing error (§8.8).
     *
     * @return the body stream; the same stream on every call
     */
    public InputStream body() {
        return body;
    }

    /**
     * Reads what is left of the body into memory. Convenient for small bodies; use
     * {@link #body()} for large ones.
     *
     * @return the rest of the body
     * @throws IOException when the request's framing breaks (§8.8)
     */
    public byte[] bodyBytes() throws IOException {
        return body.readAllBytes();
    }

    /**
     * Reads what is left of the body as UTF-8 text.
     *
     * @return the rest of the body, decoded as UTF-8
     * @throws IOException when the request's framing breaks (§8.8)
     */
    public String bodyText() throws IOException {
        return new String(bodyBytes(), StandardCharsets.UTF_8);
    }

    /**
     * The trailer fields of a chunked body (§4.2). They are known once the body has been read
     * to its end; before that, and for other bodies, the list is empty.
     *
     * @return the trailer fields
     */
    public Headers trailers() {
        return body.trailers();
    }

    @Override
    public String toString() {
        return method + " " + target + " (request " + requestId + ")";
    }
}
