package dev.afterburn.runtime;

import java.nio.charset.StandardCharsets;

/** What a handler answered to a {@link TestRequest}. */
public final class TestResponse {
    private final int status;
    private final Headers headers;
    private final byte[] body;
    private final Headers trailers;
    private final boolean complete;

    TestResponse(int status, Headers headers, byte[] body, Headers trailers, boolean complete) {
        this.trailers = trailers;
        this.status = status;
        this.headers = headers;
        this.body = body;
        this.complete = complete;
    }

    /** @return the status, or -1 when not even a head was sent */
    public int status() {
        return status;
    }

    /** @return the response fields as sent, framing fields included */
    public Headers headers() {
        return headers;
    }

    /** @return the body, de-chunked */
    public byte[] body() {
        return body.clone();
    }

    /** @return the trailer fields of a chunked body, as sent; empty when there were none */
    public Headers trailers() {
        return trailers;
    }

    /** @return the body as UTF-8 text */
    public String bodyText() {
        return new String(body, StandardCharsets.UTF_8);
    }

    /**
     * @return whether the response ended properly; false when the handler failed after the
     *     response started and the library left it incomplete (PROTOCOL.md §8.3)
     */
    public boolean complete() {
        return complete;
    }

    @Override
    public String toString() {
        return status + " " + headers + " " + bodyText();
    }
}
