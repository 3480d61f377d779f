package dev.afterburn.runtime;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Supplier;

/**
 * A handler's response: a status, fields in order, and a body that is either complete
 * ({@link #body(byte[])}) or streamed ({@link #stream(BodyWriter)}).
 *
 * <pre>{@code
 * Response.ok().header("Content-Type", "application/json").body("{\"ok\":true}");
 * Response.status(204);
 * Response.ok().header("Content-Type", "text/event-stream").stream(out -> {
 *     for (String token : tokens) {
 *         out.write(("data: " + token + "\n\n").getBytes(StandardCharsets.UTF_8));
 *         out.flush(); // one chunk, sent now
 *     }
 * });
 * }</pre>
 *
 * <p>Framing is the library's job (PROTOCOL.md §4.4): a complete body is sent with
 * {@code Content-Length}; a streamed body is chunked, unless the handler declares a
 * {@code Content-Length}, which is then used and enforced. {@code Transfer-Encoding} set
 * by the handler is ignored. Responses to {@code HEAD}, and {@code 204} and {@code 304}
 * responses, never carry a body. Field names must be tokens and values must not contain
 * CR, LF or NUL; a response that breaks this is answered as a handler error.
 *
 * <p>Trailers (PROTOCOL.md §4.4): {@link #trailers(Supplier)} adds fields after a chunked
 * body, computed once the body is written, such as a checksum of what was streamed:
 *
 * <pre>{@code
 * MessageDigest sha = MessageDigest.getInstance("SHA-256");
 * Response.ok().header("Trailer", "Digest")
 *         .stream(out -> { for (byte[] b : parts) { sha.update(b); out.write(b); } })
 *         .trailers(() -> Headers.of("Digest", "sha-256=" + Base64.getEncoder().encodeToString(sha.digest())));
 * }</pre>
 */
public final class Response {
    private static final byte[] NO_BODY = new byte[0];

    private int status; // changes only through a deferred response's ResponseHead
    private final List<Headers.Field> fields = new ArrayList<>(4);
    private byte[] body = NO_BODY;
    private BodyWriter writer;
    private DeferredWriter deferred;
    private Supplier<Headers> trailers;

    private Response(int status) {
        this.status = checkedStatus(status);
    }

    static int checkedStatus(int status) {
        if (status < 200 || status > 999) {
            // §4.4: a library MUST NOT send 1xx responses; 100 Continue is the watchdog's job.
            throw new IllegalArgumentException("status " + status + " is not a final status (200-999)");
        }
        return status;
    }

    /**
     * A response whose status, fields and trailers are decided while its body is written, the
     * way a servlet container's response is: {@code writer} runs after the handler returned,
     * on the same thread, and sets the head through a {@link ResponseHead} until the head is
     * sent, which happens at the first byte written to the body, its first {@code flush()}, or
     * when the writer returns. For adapters of frameworks that commit their responses
     * themselves ({@code dev.afterburn:afterburn-servlet}); a handler that knows its status up
     * front uses {@link #stream(BodyWriter)}.
     *
     * <pre>{@code
     * return Response.deferred((head, out) -> {
     *     Result r = compute();                        // may throw: nothing was sent, so 500
     *     head.status(r.ok() ? 200 : 404);
     *     head.header("Content-Type", "text/plain");
     *     out.write(r.text().getBytes(StandardCharsets.UTF_8));
     * });
     * }</pre>
     *
     * <p>Framing follows the fields at the moment the head is sent: a declared
     * {@code Content-Length} is used and enforced, else the body is chunked. A writer that
     * fails before the head was sent is answered {@code 500} (§8.3); after, the response is
     * left incomplete.
     *
     * @param writer decides the head and writes the body
     * @return a {@code 200} response until the writer says otherwise
     */
    public static Response deferred(DeferredWriter writer) {
        Response r = new Response(200);
        r.deferred = java.util.Objects.requireNonNull(writer, "writer");
        return r;
    }

    /**
     * A response with the given status and, until set, an empty body.
     *
     * @param status a final status, 200 to 999
     * @return the response
     */
    public static Response status(int status) {
        return new Response(status);
    }

    /** @return a {@code 200} response with, until set, an empty body */
    public static Response ok() {
        return new Response(200);
    }

    /**
     * Adds a field line; adding a name again adds another line (§4.2 keeps every value).
     *
     * @param name the field name, a token
     * @param value the value
     * @return this response
     */
    public Response header(String name, String value) {
        fields.add(new Headers.Field(name, value));
        return this;
    }

    /**
     * Sets a complete body, sent with {@code Content-Length}.
     *
     * @param bytes the body
     * @return this response
     */
    public Response body(byte[] bytes) {
        this.body = bytes;
        this.writer = null;
        this.deferred = null;
        return this;
    }

    /**
     * Sets a complete UTF-8 text body; adds {@code Content-Type: text/plain; charset=utf-8}
     * unless a {@code Content-Type} is set.
     *
     * @param text the body
     * @return this response
     */
    public Response body(String text) {
        if (!headers().contains("Content-Type")) header("Content-Type", "text/plain; charset=utf-8");
        return body(text.getBytes(StandardCharsets.UTF_8));
    }

    /**
     * Streams the body: the library calls {@code writer} after the handler returned and
     * sends what it writes, chunked, each {@code flush()} sending one chunk at once.
     *
     * @param writer writes the body
     * @return this response
     */
    public Response stream(BodyWriter writer) {
        this.writer = writer;
        this.deferred = null;
        this.body = NO_BODY;
        return this;
    }

    /**
     * Sends trailer fields after the body (RFC 9112 §7.1.2): the library calls
     * {@code trailers} once, when the body is written (after a {@link BodyWriter} returned),
     * and sends its fields in the chunked body's trailer section. A response with trailers is
     * therefore chunked, also one with a complete {@link #body(byte[])}, which goes out as one
     * chunk; one that also declares a {@code Content-Length} is a handler error, since such a
     * body has no place for trailers. {@code HEAD}, {@code 204} and {@code 304} responses
     * have no body and send none (the supplier is not called).
     *
     * <p>Declare the names in a {@code Trailer} head field when a client wants to know them
     * in advance. Names and values follow the rules of head fields; the framing fields
     * ({@code Content-Length}, {@code Transfer-Encoding}, {@code Trailer}) and the reserved
     * {@code AfterBurn-*} fields (§4.4) are dropped, and the watchdog drops the other fields
     * that must not be trailers (RFC 9110 §6.5.1) before the response reaches the client.
     * A supplier that throws, or returns a malformed field, fails the response as a handler
     * would (§8.3): before anything was sent that is a {@code 500}, after it the chunked
     * body is left without its last chunk.
     *
     * @param trailers gives the trailer fields; may return {@link Headers#empty()}
     * @return this response
     */
    public Response trailers(Supplier<Headers> trailers) {
        this.trailers = java.util.Objects.requireNonNull(trailers, "trailers");
        return this;
    }

    /** @return the status */
    public int status() {
        return status;
    }

    /** @return the fields set so far, in order */
    public Headers headers() {
        return new Headers(new ArrayList<>(fields));
    }

    List<Headers.Field> fieldList() {
        return fields;
    }

    byte[] bodyBytes() {
        return body;
    }

    BodyWriter writer() {
        return writer;
    }

    DeferredWriter deferredWriter() {
        return deferred;
    }

    /** A deferred response's head, set by its writer (ResponseHead). */
    void setStatus(int status) {
        this.status = checkedStatus(status);
    }

    Supplier<Headers> trailerSupplier() {
        return trailers;
    }
}
