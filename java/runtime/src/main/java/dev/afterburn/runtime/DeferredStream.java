package dev.afterburn.runtime;

import java.io.IOException;
import java.io.OutputStream;
import java.util.function.Supplier;

/**
 * The body stream of a deferred response ({@link Response#deferred(DeferredWriter)}) and its
 * head: the head stays open to changes until the first byte, flush or close; then the
 * {@link ResponseWriter} opens its body stream from the head as it stands (framing included)
 * and every later call goes there.
 */
final class DeferredStream extends OutputStream implements ResponseHead {
    private final ResponseWriter writer;
    private final Response response;
    private OutputStream body; // null until the head is sealed

    DeferredStream(ResponseWriter writer, Response response) {
        this.writer = writer;
        this.response = response;
    }

    @Override
    public void status(int status) {
        open();
        response.setStatus(status);
    }

    @Override
    public void header(String name, String value) {
        open();
        response.header(name, value);
    }

    @Override
    public void trailers(Supplier<Headers> trailers) {
        open();
        response.trailers(trailers);
    }

    @Override
    public boolean sent() {
        return body != null;
    }

    private void open() {
        if (body != null) throw new IllegalStateException("afterburn: the response head was already sent");
    }

    /** Fixes the head: from here the response writer frames the body. */
    private OutputStream body() {
        if (body == null) body = writer.open(response);
        return body;
    }

    @Override
    public void write(int b) throws IOException {
        body().write(b);
    }

    @Override
    public void write(byte[] b, int off, int len) throws IOException {
        if (len == 0 && body == null) return; // an empty write decides nothing
        body().write(b, off, len);
    }

    @Override
    public void flush() throws IOException {
        body().flush();
    }

    @Override
    public void close() throws IOException {
        body().close();
    }
}
