package dev.afterburn.servlet;

import jakarta.servlet.ReadListener;
import jakarta.servlet.ServletInputStream;
import java.io.IOException;
import java.io.InputStream;

/**
 * The request body as a servlet reads it: the runtime's de-chunked body stream (PROTOCOL.md
 * §6.1), read from the lane's pipe as the servlet asks. Reads block; a {@link ReadListener}
 * (Servlet 6 §3.1 non-blocking I/O) is called on the lane's thread once the dispatch that
 * set it returned, with {@link #isReady()} always true.
 */
final class PipeInput extends ServletInputStream {
    private final InputStream body;
    private boolean finished;
    private long consumed;
    ReadListener listener;

    PipeInput(InputStream body) {
        this.body = body;
    }

    @Override
    public int read() throws IOException {
        int b = body.read();
        if (b < 0) finished = true;
        else consumed++;
        return b;
    }

    @Override
    public int read(byte[] b, int off, int len) throws IOException {
        int n = body.read(b, off, len);
        if (n < 0) finished = true;
        else consumed += n;
        return n;
    }

    @Override
    public int available() throws IOException {
        return body.available();
    }

    @Override
    public boolean isFinished() {
        return finished;
    }

    @Override
    public boolean isReady() {
        return true; // a read blocks on the pipe at most until the watchdog writes more
    }

    @Override
    public void setReadListener(ReadListener readListener) {
        if (readListener == null) throw new NullPointerException("readListener");
        if (listener != null) throw new IllegalStateException("afterburn-servlet: a ReadListener is already set");
        this.listener = readListener;
    }

    /**
     * Calls the listener until the body ends: onDataAvailable while bytes remain (isReady is
     * always true, so it reads until it sees the end or returns), then onAllDataRead; a
     * listener that twice in a row returns without reading anything gets onError.
     */
    void runListener() {
        ReadListener l = listener;
        if (l == null) return;
        try {
            int idle = 0;
            while (!finished) {
                long before = consumed;
                l.onDataAvailable();
                idle = consumed == before && !finished ? idle + 1 : 0;
                if (idle == 2) {
                    throw new IllegalStateException("afterburn-servlet: the ReadListener stopped reading before the end of the body");
                }
            }
            l.onAllDataRead();
        } catch (Throwable t) {
            l.onError(t);
        }
    }
}
