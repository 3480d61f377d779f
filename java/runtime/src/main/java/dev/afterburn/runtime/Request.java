package dev.afterburn.runtime;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;

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
 *
 * <p>With lanes (PROTOCOL.md §2.5) several requests are in flight at once, each on a thread of
 * its own: a {@code Request} belongs to the thread its handler was called on. Its
 * {@link #cancelled()} and {@link #log(String)} are the two methods other threads may call.
 */
public final class Request {
    private final String method;
    private final String target;
    private final Headers headers;
    private final String requestId;
    private final long deadlineNanos; // System.nanoTime() at the deadline
    private final boolean hasDeadline;
    private final BodyInputStream body;
    private final Cancellation cancellation;
    private final OutputStream log;
    private final LogFormat logFormat;
    private Map<String, List<String>> queryParams; // parsed on first use

    Request(String method, String target, Headers headers, String requestId, long headReadNanos,
            long timeoutMs, BodyInputStream body, Cancellation cancellation, OutputStream log, LogFormat logFormat) {
        this.cancellation = cancellation;
        this.log = log;
        this.logFormat = logFormat;
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

    /**
     * The query's parameters, decoded as a browser encodes a form
     * ({@code application/x-www-form-urlencoded}, WHATWG URL Standard §5.1): {@code +} is a
     * space, {@code %XX} a byte, the bytes UTF-8; {@code a&b=} gives {@code a} and {@code b}
     * the empty value; a malformed escape ({@code 100%}, {@code %zz}) is kept as it is and
     * bytes that are not UTF-8 become U+FFFD, never an error (the raw {@link #query()} is
     * there to refuse them).
     *
     * <pre>{@code
     * // GET /search?q=caf%C3%A9+au+lait&tag=a&tag=b&debug
     * request.queryParams();       // {q=["café au lait"], tag=["a", "b"], debug=[""]}
     * request.queryParam("tag");   // "a"
     * request.queryParam("page");  // null
     * }</pre>
     *
     * @return names in the order of their first appearance, each with every value in order;
     *     immutable, empty when there is no query
     */
    public Map<String, List<String>> queryParams() {
        if (queryParams == null) queryParams = QueryString.parse(query());
        return queryParams;
    }

    /**
     * The first value of a query parameter, decoded as {@link #queryParams()} says.
     *
     * @param name the parameter name, case-sensitive
     * @return its first value ({@code ""} for {@code ?name} or {@code ?name=}), or null when
     *     the query has no such parameter
     */
    public String queryParam(String name) {
        List<String> values = queryParams().get(name);
        return values == null ? null : values.get(0);
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
     * Whether this exchange was cancelled (PROTOCOL.md §2.5): the watchdog gave up on it (it
     * passed its deadline and the client got {@code 504}) and wrote {@code cancel} on the
     * cancel pipe, or the library's own sweep found the deadline of §5.2 passed (50 to about
     * 60 ms after it, so that the watchdog's {@code 504} comes first; {@link #timeRemaining()}
     * is zero from the deadline itself).
     *
     * <p>When the cancellation fires, the library also interrupts the thread the handler was
     * called on, once. The interrupt wakes {@code Thread.sleep}, {@code Object.wait},
     * {@code BlockingQueue}s, {@code lockInterruptibly} and interruptible NIO channels (which
     * it closes), but <b>not</b> a read from a {@code FileInputStream}, a socket's streams or
     * most JDBC calls: a handler doing those polls this flag between steps (or sets timeouts,
     * such as {@code Statement.setQueryTimeout}, from {@link #timeRemaining()}). Whatever the
     * handler then does, the exchange still needs a response: return one (nobody reads it),
     * or throw and the library answers {@code 500}. The interrupt is cleared before the lane's
     * next request; it never reaches another exchange.
     *
     * @return whether the exchange was cancelled
     */
    public boolean cancelled() {
        return cancellation.fired();
    }

    /**
     * Writes one line to stderr, tagged with the request id: {@code [REQUEST-ID] text}, or,
     * when the watchdog logs JSON ({@code AFTERBURN_LOG_FORMAT=json}), one JSON object,
     * {@code {"request_id":"REQUEST-ID","msg":"text"}}, which it merges into its own line. With
     * several requests in flight (PROTOCOL.md §2.5) this is what makes a line attributable
     * to its request; the watchdog logs it with the worker's output (§9.5). Each line goes
     * out in one write, so lines of concurrent requests do not interleave (up to 4 KiB, the
     * pipe's atomic size). Safe to call from any thread, also after the exchange ended.
     *
     * @param text the line, without a newline
     */
    public void log(String text) {
        byte[] line = logFormat.line(requestId, text);
        try {
            log.write(line); // one write: one line
            log.flush();
        } catch (IOException ignored) {
            // stderr is gone; nothing is left to tell
        }
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
