package dev.afterburn.runtime;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.buffer.UnpooledByteBufAllocator;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.handler.codec.http.DefaultHttpContent;
import io.netty.handler.codec.http.DefaultFullHttpResponse;
import io.netty.handler.codec.http.DefaultHttpHeadersFactory;
import io.netty.handler.codec.http.DefaultHttpResponse;
import io.netty.handler.codec.http.HttpHeaders;
import io.netty.handler.codec.http.HttpResponseEncoder;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.handler.codec.http.LastHttpContent;
import java.io.IOException;
import java.io.OutputStream;

/**
 * Turns a handler's {@link Response} into HTTP/1.1 bytes with Netty's
 * {@link HttpResponseEncoder} on an {@link EmbeddedChannel} owned by the serving thread.
 *
 * <p>Framing (PROTOCOL.md §4.4): a complete body goes out with {@code Content-Length}; a
 * streamed body is chunked, each {@code flush()} sending one chunk, unless the handler
 * declared a {@code Content-Length}, which is then enforced. {@code HEAD}, {@code 204} and
 * {@code 304} responses carry no body. Nothing reaches the pipe before the head is
 * committed, so a handler that fails early can still be answered 500 (§8.3).
 */
final class ResponseWriter {
    /** Response fields are checked below, once; Netty need not check them again. */
    private static final DefaultHttpHeadersFactory HEADERS = DefaultHttpHeadersFactory.headersFactory().withValidation(false);
    private static final DefaultHttpHeadersFactory TRAILERS = DefaultHttpHeadersFactory.trailersFactory().withValidation(false);

    /** Body bytes a streamed response holds before it sends them as a chunk. */
    static final int STREAM_BUFFER = 16 * 1024;

    private final ResponseSink sink;
    private EmbeddedChannel encoder;

    // The response being written.
    private boolean headRequest;
    private boolean committed;
    private boolean complete;
    private boolean chunked;
    private boolean bodyless;
    private long declaredLength;
    private long written;

    ResponseWriter(ResponseSink sink) {
        this.sink = sink;
        this.encoder = newEncoder();
    }

    private static EmbeddedChannel newEncoder() {
        EmbeddedChannel ch = new EmbeddedChannel(new HttpResponseEncoder());
        ch.config().setAllocator(new UnpooledByteBufAllocator(false));
        return ch;
    }

    /** Starts the response to a request; {@code headRequest} for {@code HEAD} (no body). */
    void begin(boolean headRequest) {
        this.headRequest = headRequest;
        committed = false;
        complete = false;
        chunked = false;
        bodyless = false;
        declaredLength = -1;
        written = 0;
    }

    /** Whether the head was encoded: the status is decided. */
    boolean committed() {
        return committed;
    }

    /** Whether the response ended with its full body: false leaves it incomplete (§8.3). */
    boolean complete() {
        return complete;
    }

    /** Writes a response with a complete body and flushes it. */
    void sendComplete(Response r) throws IOException {
        byte[] body = r.bodyBytes();
        HttpHeaders h = fields(r);
        bodyless = headRequest || noBodyStatus(r.status());
        if (declaredLength >= 0 && declaredLength != body.length && !bodyless) {
            throw new IllegalStateException("the response declares Content-Length " + declaredLength
                    + " but its body has " + body.length + " bytes");
        }
        if (r.status() == 204) {
            h.remove("Content-Length"); // RFC 9110 §8.6: never in a 204
        } else if (declaredLength < 0 && (r.status() != 304 || body.length > 0)) {
            // §4.4: a HEAD response MAY carry the length the body would have had.
            h.set("Content-Length", body.length);
        }
        // One message for head and body: one pass through the encoder.
        encode(new DefaultFullHttpResponse(HttpVersion.HTTP_1_1, HttpResponseStatus.valueOf(r.status()),
                bodyless ? Unpooled.EMPTY_BUFFER : Unpooled.wrappedBuffer(body), h, TRAILERS.newEmptyHeaders()));
        committed = true;
        written = body.length;
        complete = true;
        sink.flush();
    }

    /** Opens the stream a {@link BodyWriter} writes to; the head goes out at the first flush. */
    OutputStream open(Response r) {
        HttpHeaders h = fields(r);
        bodyless = headRequest || noBodyStatus(r.status());
        if (r.status() == 204) {
            h.remove("Content-Length");
            declaredLength = -1;
        } else if (!bodyless && declaredLength < 0) {
            h.set("Transfer-Encoding", "chunked");
            chunked = true;
        }
        return new BodyStream(new DefaultHttpResponse(HttpVersion.HTTP_1_1, HttpResponseStatus.valueOf(r.status()), h));
    }

    /** Drops a response of which nothing reached the pipe, to answer an error instead. */
    void discard() {
        sink.discard();
        encoder.finishAndReleaseAll();
        encoder = newEncoder(); // its state belonged to the dropped response
    }

    private static boolean noBodyStatus(int status) {
        return status == 204 || status == 304;
    }

    /**
     * The handler's fields as Netty headers. The framing fields are the library's; names must
     * be tokens and values free of CR, LF and NUL, so a handler cannot split the response.
     */
    private HttpHeaders fields(Response r) {
        HttpHeaders h = HEADERS.newHeaders();
        for (Headers.Field f : r.fieldList()) {
            String name = f.name();
            String value = f.value() == null ? "" : f.value().strip();
            if (!Ascii.isToken(name)) throw new IllegalArgumentException("response field name " + Ascii.quote(name) + " is not a token");
            for (int i = 0; i < value.length(); i++) {
                char c = value.charAt(i);
                if (c == '\r' || c == '\n' || c == 0) {
                    throw new IllegalArgumentException("the value of response field " + name + " has a CR, LF or NUL");
                }
            }
            if (name.equalsIgnoreCase("Transfer-Encoding")) continue;
            if (name.equalsIgnoreCase("Content-Length")) {
                long n = Ascii.parseDigits(value);
                if (n < 0) throw new IllegalArgumentException("response Content-Length " + Ascii.quote(value));
                if (declaredLength >= 0 && declaredLength != n) throw new IllegalArgumentException("two response Content-Length values");
                declaredLength = n;
            }
            h.add(name, value);
        }
        return h;
    }

    private void encode(Object message) throws IOException {
        encoder.writeOutbound(message);
        ByteBuf out;
        while ((out = encoder.readOutbound()) != null) {
            try {
                out.getBytes(out.readerIndex(), sink, out.readableBytes());
            } finally {
                out.release();
            }
        }
    }

    /** The stream given to a {@link BodyWriter}. */
    private final class BodyStream extends OutputStream {
        private final DefaultHttpResponse head;
        private final byte[] buf = new byte[STREAM_BUFFER];
        private int len;
        private boolean closed;

        BodyStream(DefaultHttpResponse head) {
            this.head = head;
        }

        @Override
        public void write(int b) throws IOException {
            write(new byte[] {(byte) b}, 0, 1);
        }

        @Override
        public void write(byte[] b, int off, int n) throws IOException {
            java.util.Objects.checkFromIndexSize(off, n, b.length);
            if (closed) throw new IOException("afterburn: the response body is closed");
            if (n == 0) return;
            if (declaredLength >= 0 && written + n > declaredLength) {
                throw new IOException("afterburn: writing more than the declared Content-Length " + declaredLength);
            }
            written += n;
            if (bodyless) return; // HEAD, 204, 304: nothing is sent
            if (n <= buf.length - len) {
                System.arraycopy(b, off, buf, len, n);
                len += n;
                return;
            }
            sendBuffered();
            if (n >= buf.length) {
                send(b, off, n);
            } else {
                System.arraycopy(b, off, buf, 0, n);
                len = n;
            }
        }

        /** Sends the head, and what was written since the last flush as one chunk (§6.1). */
        @Override
        public void flush() throws IOException {
            if (closed) return;
            sendBuffered();
            sink.flush();
        }

        /** Ends the body: the last chunk, or a check that the declared length was written. */
        @Override
        public void close() throws IOException {
            if (closed) return;
            closed = true;
            sendBuffered();
            encode(LastHttpContent.EMPTY_LAST_CONTENT);
            // A body shorter than its Content-Length must not look complete (§8.3).
            complete = bodyless || declaredLength < 0 || written == declaredLength;
            sink.flush();
        }

        private void sendBuffered() throws IOException {
            commit();
            if (len > 0) {
                int n = len;
                len = 0;
                send(buf, 0, n);
            }
        }

        private void send(byte[] b, int off, int n) throws IOException {
            commit();
            encode(new DefaultHttpContent(Unpooled.wrappedBuffer(b, off, n)));
        }

        private void commit() throws IOException {
            if (!committed) {
                committed = true;
                encode(head);
            }
        }
    }
}
