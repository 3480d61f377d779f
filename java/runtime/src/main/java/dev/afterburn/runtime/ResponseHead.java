package dev.afterburn.runtime;

import java.util.function.Supplier;

/**
 * The head of a deferred response ({@link Response#deferred(DeferredWriter)}) while it can
 * still change: until the first byte of the body, the first flush, or the end of the writer.
 * Every method throws {@link IllegalStateException} once the head was sent.
 */
public interface ResponseHead {
    /**
     * Sets the status.
     *
     * @param status a final status, 200 to 999 (PROTOCOL.md §4.4: never 1xx)
     * @throws IllegalArgumentException for another status
     */
    void status(int status);

    /**
     * Adds a field line; a name added again adds another line. The rules of
     * {@link Response#header(String, String)} apply.
     *
     * @param name the field name, a token
     * @param value the value
     */
    void header(String name, String value);

    /**
     * Sends trailer fields after the body, as {@link Response#trailers(Supplier)} does; the
     * body is then chunked.
     *
     * @param trailers gives the trailer fields once the body was written
     */
    void trailers(Supplier<Headers> trailers);

    /** @return whether the head was sent; from then on the other methods throw */
    boolean sent();
}
