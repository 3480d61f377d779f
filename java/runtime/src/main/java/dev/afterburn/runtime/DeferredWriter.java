package dev.afterburn.runtime;

import java.io.OutputStream;

/**
 * Writes a response whose head is decided on the way; see {@link Response#deferred(DeferredWriter)}.
 */
@FunctionalInterface
public interface DeferredWriter {
    /**
     * Sets the head and writes the body. The head is sent at the first byte written to
     * {@code body}, its first {@code flush()}, or when this method returns, whichever comes
     * first; {@code head} refuses changes after that.
     *
     * @param head the status, fields and trailers, until the head is sent
     * @param body the response body; each {@code flush()} sends what was written as a chunk
     * @throws Exception any failure: before the head was sent it is answered {@code 500}
     *     (§8.3), after it the response is left incomplete
     */
    void writeTo(ResponseHead head, OutputStream body) throws Exception;
}
