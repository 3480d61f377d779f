package dev.afterburn.runtime;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.util.Arrays;
import java.util.Objects;

/**
 * A request body, read from the worker's one request stream as the handler asks for it
 * (PROTOCOL.md §6.1). It pulls the core's events on the handler's own thread, so a handler
 * may block reading the body while it streams its response (§6.2), and at most one read
 * buffer of the body is held in memory at a time.
 *
 * <p>The bytes it returns are copied straight out of the buffer they were read into (the core
 * hands out views, not copies); {@link #transferTo} writes those views to the target stream
 * without an intermediate buffer, so echoing a body costs one copy per direction.
 */
final class BodyInputStream extends InputStream {
    /** Why a read failed: the request's framing broke (§8.8). */
    static final class FramingException extends IOException {
        private static final long serialVersionUID = 1L;

        FramingException(ProtocolError cause) {
            super("afterburn: the request body cannot be read: " + cause.detail(), cause);
        }
    }

    private static final byte[] EMPTY = new byte[0];
    /** The largest array the JVM reliably allocates (as in {@code InputStream.readAllBytes}). */
    private static final int MAX_ARRAY = Integer.MAX_VALUE - 8;

    private final Worker worker;
    // The current piece of the body: chunk[pos, end), a view valid until the next event is taken.
    private byte[] chunk = EMPTY;
    private int pos;
    private int end;
    private boolean done;
    private boolean over; // the exchange ended: the stream now belongs to the next request
    private FramingException failure;
    private Headers trailers = Headers.empty();

    BodyInputStream(Worker worker) {
        this.worker = worker;
    }

    @Override
    public int read() throws IOException {
        open();
        if (!fill()) return -1;
        return chunk[pos++] & 0xff;
    }

    @Override
    public int read(byte[] b, int off, int len) throws IOException {
        Objects.checkFromIndexSize(off, len, b.length);
        open();
        if (len == 0) return 0;
        if (!fill()) return -1;
        int n = Math.min(len, end - pos);
        System.arraycopy(chunk, pos, b, off, n);
        pos += n;
        return n;
    }

    /** The rest of the body in one array, copied once from the pieces as they were read. */
    @Override
    public byte[] readAllBytes() throws IOException {
        open();
        if (!fill()) return EMPTY;
        byte[] all = Arrays.copyOfRange(chunk, pos, end);
        int n = all.length;
        pos = end;
        while (fill()) {
            int k = end - pos;
            if (k > MAX_ARRAY - n) throw new OutOfMemoryError("afterburn: the request body is too large for an array");
            if (n + k > all.length) all = Arrays.copyOf(all, (int) Math.min(MAX_ARRAY, Math.max(n + k, 2L * all.length)));
            System.arraycopy(chunk, pos, all, n, k);
            n += k;
            pos = end;
        }
        return n == all.length ? all : Arrays.copyOf(all, n);
    }

    /**
     * Writes the rest of the body to {@code out} piece by piece as it is read, each piece
     * straight from the read buffer: a whole read per {@code write}, no intermediate copy.
     */
    @Override
    public long transferTo(OutputStream out) throws IOException {
        Objects.requireNonNull(out, "out");
        open();
        long total = 0;
        while (fill()) {
            int k = end - pos;
            int from = pos;
            pos = end; // consumed before the write: a failing write must not see it again
            out.write(chunk, from, k);
            total += k;
        }
        return total;
    }

    @Override
    public long skip(long n) throws IOException {
        open();
        long skipped = 0;
        while (skipped < n && fill()) {
            int k = (int) Math.min(n - skipped, end - pos);
            pos += k;
            skipped += k;
        }
        return skipped;
    }

    @Override
    public int available() {
        return over ? 0 : end - pos;
    }

    private void open() throws IOException {
        if (over) throw new IOException("afterburn: the request body is not readable after the exchange ended");
    }

    /** Makes bytes available; false at the end of the body. */
    private boolean fill() throws FramingException {
        if (failure != null) throw failure;
        while (pos == end) {
            if (done) return false;
            RequestEvent ev = worker.nextEvent();
            if (ev instanceof RequestEvent.Content) {
                RequestEvent.Content c = (RequestEvent.Content) ev;
                chunk = c.array();
                pos = c.offset();
                end = c.offset() + c.length();
            } else if (ev instanceof RequestEvent.End) {
                trailers = ((RequestEvent.End) ev).trailers();
                done = true;
                chunk = EMPTY;
                pos = end = 0;
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
                int n = (int) Math.min(limit, end - pos);
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
        chunk = EMPTY; // the view's buffer is about to be reused
        pos = end = 0;
    }

    Headers trailers() {
        return trailers;
    }
}
