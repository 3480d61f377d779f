package dev.afterburn.runtime;

import java.io.IOException;
import java.io.OutputStream;

/**
 * The buffered response stream. It counts the bytes that reached the pipe, because once a
 * byte of a response left the process its status is final (PROTOCOL.md §8.3), and it can
 * drop bytes not yet sent, so that an unsent response can still be replaced by an error
 * response.
 *
 * <p>Writes are gathered in one buffer while they fit (a head and a mid-sized body leave in
 * one system call); a write of at least {@link #DIRECT} bytes that does not fit goes to the
 * pipe straight from the caller's array after what was buffered, so the large pieces of a
 * streamed body are not copied on their way out.
 */
final class ResponseSink extends OutputStream {
    /** A write to the response pipe failed: the watchdog is gone or gave up on the worker. */
    static final class PipeException extends IOException {
        private static final long serialVersionUID = 1L;

        PipeException(IOException cause) {
            super("afterburn: writing the response pipe: " + cause.getMessage(), cause);
        }
    }

    private final OutputStream pipe;
    /** Writes this large that do not fit skip the buffer: a copy would cost more than it saves. */
    static final int DIRECT = 32 * 1024;

    private final byte[] buf = new byte[64 * 1024];
    private int len;
    private long sent;

    ResponseSink(OutputStream pipe) {
        this.pipe = pipe;
    }

    @Override
    public void write(int b) throws IOException {
        if (len == buf.length) drainBuffer();
        buf[len++] = (byte) b;
    }

    @Override
    public void write(byte[] b, int off, int n) throws IOException {
        if (n > buf.length - len) {
            drainBuffer();
            if (n >= DIRECT) {
                toPipe(b, off, n);
                return;
            }
        }
        System.arraycopy(b, off, buf, len, n);
        len += n;
    }

    /** Sends everything buffered to the pipe. */
    @Override
    public void flush() throws IOException {
        drainBuffer();
        try {
            pipe.flush();
        } catch (IOException e) {
            throw new PipeException(e);
        }
    }

    private void drainBuffer() throws IOException {
        if (len > 0) {
            int n = len;
            len = 0;
            toPipe(buf, 0, n);
        }
    }

    private void toPipe(byte[] b, int off, int n) throws PipeException {
        try {
            pipe.write(b, off, n);
        } catch (IOException e) {
            throw new PipeException(e);
        }
        sent += n;
    }

    /** Drops what was written but not sent. */
    void discard() {
        len = 0;
    }

    /** @return the bytes that reached the pipe so far */
    long sent() {
        return sent;
    }

    @Override
    public void close() throws IOException {
        try {
            flush();
        } finally {
            pipe.close();
        }
    }
}
