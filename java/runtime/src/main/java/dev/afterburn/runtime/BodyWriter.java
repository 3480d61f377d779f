package dev.afterburn.runtime;

import java.io.OutputStream;

/**
 * Writes a streamed response body; see {@link Response#stream(BodyWriter)}.
 *
 * <p>Every {@code flush()} of the stream sends what was written so far to the client as
 * one chunk (PROTOCOL.md §6.1), so server-sent events and token streams arrive as they are
 * produced. The writer runs after the handler returned, on the same thread, and may still
 * read the request body: requests and responses stream in both directions at once (§6.2).
 */
@FunctionalInterface
public interface BodyWriter {
    /**
     * Writes the body. Closing the stream is not needed.
     *
     * @param body the response body
     * @throws Exception any failure; after the first byte went out the response is left
     *     visibly incomplete and the worker is replaced (§8.3)
     */
    void writeTo(OutputStream body) throws Exception;
}
