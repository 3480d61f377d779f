package dev.afterburn.runtime;

import java.io.IOException;
import java.io.InputStream;

/**
 * A request body, read from the worker's one request stream as the handler asks for it
 * (PROTOCOL.md §6.1). It pulls the core's events on the handler's own thread, so a handler
 * may block reading the body while it streams its response (§6.2), and at most one read
 * buffer of the body is held in memory at a time.
 */
final class BodyInputStream extends InputStream {
    /** Why a read failed: the request's framing broke (§8.8). */
    static final class FramingException extends IOException {
        private static final long serialVersionUID = 1L;

        FramingException(ProtocolError cause) {
            super("afterburn: the request body cannot be read: " + cause.detail(), cause);
        }
    }

    private final Worker worker;
    private byte[] chunk;
    private int pos;
    private boolean done;
    private boolean over; // the exchange ended: the stream now belongs to the next request
    private FramingException failure;
    private Headers trailers = Headers.empty();

    BodyInputStream(Worker worker) {
        this.worker = worker;
    }

    @Override
    public int read() throws IOException {
        byte[] one = new byte[1];
        int n = read(one, 0, 1);
        return n < 0 ? -1 : one[0] & 0xff;
    }

    @Override
    public int read(byte[] b, int off, int len) throws IOException {
        java.util.Objects.checkFromIndexSize(off, len, b.length);
        if (over) throw new IOException("afterburn: the request body is not readable after the exchange ended");
        if (len == 0) return 0;
        if (!fill()) return -1;
        int n = Math.min(len, chunk.length - pos);
        System.arraycopy(chunk, pos, b, off, n);
        pos += n;
        return n;
    }

    @Override
    public int available() {
        return chunk == null ? 0 : chunk.length - pos;
    }

    /** Makes bytes available; false at the end of the body. */
    private boolean fill() throws FramingException {
        if (failure != null) throw failure;
        while (chunk == null || pos == chunk.length) {
            if (done) return false;
            RequestEvent ev = worker.nextEvent();
            if (ev instanceof RequestEvent.Content) {
                chunk = ((RequestEvent.Content) ev).bytes();
                pos = 0;
            } else if (ev instanceof RequestEvent.End) {
                trailers = ((RequestEvent.End) ev).trailers();
                done = true;
                chunk = null;
                return false;
            } else if (ev instanceof RequestEvent.Failure) {
                failure = new FramingException(((RequestEvent.Failure) ev).error());
                throw failure;
            } else {
                // The core ends every body before the next head or the end of the stream.
                throw new IllegalStateException("afterburn: " + ev + " inside a request body");
            }
        }
        return true;
    }

    /**
     * Reads and discards up to {@code limit} bytes of what the handler left (§6.3).
     *
     * @return whether the end of the body was reached; false also when the framing broke
     */
    boolean drain(long limit) {
        try {
            while (limit > 0) {
                if (!fill()) return true;
                int n = (int) Math.min(limit, chunk.length - pos);
                pos += n;
                limit -= n;
            }
            return done;
        } catch (FramingException e) {
            return false;
        }
    }

    /** Ends the handler's access: the bytes after the body are the next request's. */
    void endExchange() {
        over = true;
    }

    Headers trailers() {
        return trailers;
    }
}
