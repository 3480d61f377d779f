package dev.afterburn.servlet;

import jakarta.servlet.ServletOutputStream;
import jakarta.servlet.WriteListener;
import java.io.IOException;
import java.io.OutputStream;

/**
 * The response body as a servlet writes it: a buffer of {@code getBufferSize()} bytes in front
 * of the runtime's deferred response (dev.afterburn.runtime.Response#deferred). The head goes
 * out when the response commits — the buffer overflows, the servlet flushes, or the exchange
 * ends — and a response that ends uncommitted is sent with its {@code Content-Length}, so a
 * small response leaves in one write. Each flush after that is one chunk (PROTOCOL.md §6.1).
 */
final class PipeOutput extends ServletOutputStream {
    private final PipeResponse response;
    private byte[] buf;
    private int len;
    private boolean committed;
    private boolean closed;
    private boolean holdFlush; // while the container moves a writer's characters in, a flush is not a commit
    private WriteListener listener;

    PipeOutput(PipeResponse response, int bufferSize) {
        this.response = response;
        this.buf = new byte[bufferSize];
    }

    boolean committed() {
        return committed;
    }

    int bufferSize() {
        return buf.length;
    }

    int buffered() {
        return len;
    }

    void bufferSize(int size) {
        if (committed || len > 0) throw new IllegalStateException("afterburn-servlet: setBufferSize after content was written");
        buf = new byte[Math.max(size, 0)];
    }

    void resetBuffer() {
        if (committed) throw new IllegalStateException("afterburn-servlet: resetBuffer after the response was committed");
        len = 0;
    }

    /** The response is open again after reset(): the stream is not closed any more. */
    void reopen() {
        closed = false;
    }

    @Override
    public void write(int b) throws IOException {
        if (discarding()) return;
        if (len == buf.length) overflow(1);
        if (len < buf.length) {
            buf[len++] = (byte) b;
            return;
        }
        out().write(b);
    }

    @Override
    public void write(byte[] b, int off, int n) throws IOException {
        java.util.Objects.checkFromIndexSize(off, n, b.length);
        if (discarding() || n == 0) return;
        if (len + n <= buf.length) {
            System.arraycopy(b, off, buf, len, n);
            len += n;
            return;
        }
        overflow(n);
        out().write(b, off, n);
    }

    /** After close, or while an error or redirect is pending (sendError "suspends" the response), writes are dropped. */
    private boolean discarding() {
        return closed || response.suspended();
    }

    /** The buffer cannot take {@code n} more bytes: commit and send what it holds. */
    private void overflow(int n) throws IOException {
        commit();
        if (len > 0) {
            out().write(buf, 0, len);
            len = 0;
        }
    }

    private OutputStream out() {
        return response.exchange().body();
    }

    /** Commits the response (sends its head) without sending the buffer. */
    private void commit() {
        if (!committed) {
            committed = true;
            response.writeHead();
        }
    }

    /** Moves what {@code writer} holds into the buffer without committing (a PrintWriter's flush also flushes its stream). */
    void drain(java.io.Writer writer) throws IOException {
        holdFlush = true;
        try {
            writer.flush();
        } finally {
            holdFlush = false;
        }
    }

    @Override
    public void flush() throws IOException {
        if (response.suspended() || holdFlush) return;
        commit();
        if (len > 0) {
            out().write(buf, 0, len);
            len = 0;
        }
        out().flush();
    }

    /** Servlet 6 §5.6: closing the stream commits what was written and ends the body for the servlet. */
    @Override
    public void close() throws IOException {
        if (closed) return;
        flushOnClose();
        closed = true;
    }

    private void flushOnClose() throws IOException {
        if (response.suspended()) return;
        if (!committed) finish();
        else flush();
    }

    /**
     * Ends the response: an uncommitted one gets its Content-Length (unless it declared one,
     * has trailers, or has no body by its status) and goes out in one write.
     */
    void finish() throws IOException {
        if (!committed) {
            int status = response.getStatus();
            if (!response.containsHeader("Content-Length") && !response.hasTrailers() && status != 204 && status != 304
                    && !(status >= 100 && status < 200)) {
                response.setHeaderInternal("Content-Length", Integer.toString(len));
            }
            commit();
        }
        if (len > 0) {
            out().write(buf, 0, len);
            len = 0;
        }
    }

    @Override
    public boolean isReady() {
        return true; // writes block on the pipe; the watchdog reads it as the client does
    }

    @Override
    public void setWriteListener(WriteListener writeListener) {
        if (writeListener == null) throw new NullPointerException("writeListener");
        if (listener != null) throw new IllegalStateException("afterburn-servlet: a WriteListener is already set");
        if (!response.request().isAsyncStarted()) {
            throw new IllegalStateException("afterburn-servlet: setWriteListener needs an async request (Servlet 6 §5.3)");
        }
        this.listener = writeListener;
    }

    /** Calls onWritePossible once on the lane's thread after the dispatch that set it returned. */
    void runListener() {
        WriteListener l = listener;
        if (l == null) return;
        listener = null;
        try {
            l.onWritePossible();
        } catch (Throwable t) {
            l.onError(t);
        }
    }
}
