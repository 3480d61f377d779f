package dev.afterburn.runtime;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.buffer.UnpooledByteBufAllocator;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.handler.codec.EncoderException;
import io.netty.handler.codec.http.DefaultFullHttpResponse;
import io.netty.handler.codec.http.DefaultHttpHeadersFactory;
import io.netty.handler.codec.http.DefaultHttpResponse;
import io.netty.handler.codec.http.DefaultLastHttpContent;
import io.netty.handler.codec.http.HttpHeaders;
import io.netty.handler.codec.http.HttpResponseEncoder;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.handler.codec.http.LastHttpContent;
import io.netty.util.ReferenceCountUtil;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Supplier;

/**
 * Writes every response head the worker sends: a handler's {@link Response}, turned into
 * HTTP/1.1 bytes with Netty's {@link HttpResponseEncoder}, owned by the serving thread, and
 * the responses the library makes itself, errors (§8.1) and the handshake reply (§3.2). The
 * pieces of a streamed body between its head and its last chunk are framed here (see
 * {@code BodyStream.send}).
 *
 * <p>Framing (PROTOCOL.md §4.4): a complete body goes out with {@code Content-Length}; a
 * streamed body is chunked, each {@code flush()} sending one chunk, unless the handler
 * declared a {@code Content-Length}, which is then enforced. {@code HEAD}, {@code 204} and
 * {@code 304} responses carry no body. Nothing reaches the pipe before the head is
 * committed, so a handler that fails early can still be answered 500 (§8.3).
 *
 * <p>Exchange tokens (§4.6): {@link #begin} names the token of the request being answered,
 * and whichever head is written for it, the handler's, an error or a handshake reply,
 * carries it as {@code AfterBurn-Exchange}; a head for a request without one carries none.
 * A handler's own {@code AfterBurn-Exchange} field is dropped, so user code can neither
 * forge nor remove the token. A head and a small body leave in one write (see
 * {@link ResponseSink}), so a stray writer's bytes cannot land inside them.
 */
final class ResponseWriter {
    /** Response fields are checked below, once; Netty need not check them again. */
    private static final DefaultHttpHeadersFactory HEADERS = DefaultHttpHeadersFactory.headersFactory().withValidation(false);
    private static final DefaultHttpHeadersFactory TRAILERS = DefaultHttpHeadersFactory.trailersFactory().withValidation(false);
    private static final byte[] HEX = "0123456789abcdef".getBytes(StandardCharsets.US_ASCII);
    private static final byte[] CRLF = {'\r', '\n'};
    private static final String EXCHANGE = "AfterBurn-Exchange";

    /** A complete body has no trailers; one empty instance serves every response. */
    private static final HttpHeaders NO_TRAILERS = TRAILERS.newEmptyHeaders();

    /**
     * Body bytes a streamed response holds before it sends them as a chunk; a write of at least
     * half this size is sent as a chunk of its own, without a copy into this buffer.
     */
    static final int STREAM_BUFFER = 64 * 1024;

    private final ResponseSink sink;
    private Encoder encoder;
    private byte[] streamBuffer; // one for all streamed responses, made at the first

    // The response being written.
    private String exchange; // the request's token (§4.6), or null
    private boolean headRequest;
    private boolean committed;
    private boolean complete;
    private boolean chunked;
    private boolean bodyless;
    private long declaredLength;
    private long written;

    ResponseWriter(ResponseSink sink) {
        this.sink = sink;
        this.encoder = new Encoder();
    }

    /**
     * Netty's encoder, called directly. The channel only lends it a context (for its
     * allocator); messages do not travel the channel's outbound path, whose promises, queue
     * and flush cost allocations per response and a large body of code for the JIT to compile
     * into every caller, for nothing a pipe needs.
     */
    private static final class Encoder extends HttpResponseEncoder {
        private final ChannelHandlerContext ctx;
        private final List<Object> out = new ArrayList<>(4);

        Encoder() {
            EmbeddedChannel ch = new EmbeddedChannel(this);
            ch.config().setAllocator(new UnpooledByteBufAllocator(false));
            ctx = ch.pipeline().context(this);
        }

        /** Encodes (and releases) one message; the bytes go to {@code sink}. */
        void encodeTo(Object message, OutputStream sink) throws IOException {
            try {
                encode(ctx, message, out);
                for (Object o : out) {
                    ByteBuf b = (ByteBuf) o;
                    b.getBytes(b.readerIndex(), sink, b.readableBytes());
                }
            } catch (IOException | RuntimeException e) {
                throw e;
            } catch (Exception e) {
                throw new EncoderException(e);
            } finally {
                for (Object o : out) ReferenceCountUtil.release(o);
                out.clear();
            }
        }
    }

    /**
     * Starts the response to a request: {@code headRequest} for {@code HEAD} (no body),
     * {@code exchange} the request's AfterBurn-Exchange token or null (§4.6). Every request,
     * the handshake included, and every framing error begins here before anything is sent.
     */
    void begin(boolean headRequest, String exchange) {
        this.exchange = exchange;
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
                bodyless ? Unpooled.EMPTY_BUFFER : Unpooled.wrappedBuffer(body), h, NO_TRAILERS));
        committed = true;
        written = body.length;
        complete = true;
        sink.flush();
    }

    /**
     * Opens the stream a {@link BodyWriter} writes to; the head goes out at the first flush.
     * The response's trailers, if any, are asked for when the stream closes (§4.4).
     */
    OutputStream open(Response r) {
        HttpHeaders h = fields(r);
        bodyless = headRequest || noBodyStatus(r.status());
        Supplier<Headers> trailers = bodyless ? null : r.trailerSupplier();
        if (r.status() == 204) {
            h.remove("Content-Length");
            declaredLength = -1;
        } else if (!bodyless && declaredLength < 0) {
            h.set("Transfer-Encoding", "chunked");
            chunked = true;
        } else if (trailers != null) {
            // RFC 9112 §7.1.2: only a chunked body has a trailer section.
            throw new IllegalStateException("the response has trailers and declares Content-Length "
                    + declaredLength + "; trailers need a chunked body (declare no Content-Length)");
        }
        return new BodyStream(new DefaultHttpResponse(HttpVersion.HTTP_1_1, HttpResponseStatus.valueOf(r.status()), h),
                trailers);
    }

    /**
     * Writes an error response the library makes itself (§8.1), with any extra
     * CRLF-terminated field lines, and flushes it: head and body in one write.
     */
    void sendError(int status, String type, String requestId, String extraFields) throws IOException {
        sink.write(ErrorBody.response(status, type, requestId, extraFields + exchangeField()));
        committed = true;
        sink.flush();
    }

    /**
     * Writes the handshake reply (§3.2, §3.5): status 200, the given CRLF-terminated field
     * lines and {@code Content-Length: 0}, in one write.
     */
    void sendHandshakeReply(String fields) throws IOException {
        sink.write(("HTTP/1.1 200 OK\r\n" + fields + exchangeField() + "Content-Length: 0\r\n\r\n")
                .getBytes(StandardCharsets.ISO_8859_1));
        committed = true;
        sink.flush();
    }

    /** The token as a field line for the heads built here by hand, or nothing (§4.6). */
    private String exchangeField() {
        return exchange == null ? "" : EXCHANGE + ": " + exchange + "\r\n";
    }

    /** Drops a response of which nothing reached the pipe, to answer an error instead. */
    void discard() {
        sink.discard();
        encoder = new Encoder(); // its state belonged to the dropped response
    }

    private static boolean noBodyStatus(int status) {
        return status == 204 || status == 304;
    }

    /**
     * The handler's fields as Netty headers. The framing fields are the library's; names must
     * be tokens and values free of CR, LF and NUL, so a handler cannot split the response.
     * AfterBurn-Exchange is the library's too (§4.6): the handler's is dropped, the request's
     * token added.
     */
    private HttpHeaders fields(Response r) {
        HttpHeaders h = HEADERS.newHeaders();
        for (Headers.Field f : r.fieldList()) {
            String name = f.name();
            String value = checkedValue("response field", f);
            if (name.equalsIgnoreCase("Transfer-Encoding") || name.equalsIgnoreCase(EXCHANGE)) continue;
            if (name.equalsIgnoreCase("Content-Length")) {
                long n = Ascii.parseDigits(value);
                if (n < 0) throw new IllegalArgumentException("response Content-Length " + Ascii.quote(value));
                if (declaredLength >= 0 && declaredLength != n) throw new IllegalArgumentException("two response Content-Length values");
                declaredLength = n;
            }
            h.add(name, value);
        }
        if (exchange != null) h.add(EXCHANGE, exchange);
        return h;
    }

    /**
     * A field's value, stripped, once its name is known to be a token and its value free of
     * CR, LF and NUL: a handler cannot split the response with a field.
     */
    private static String checkedValue(String what, Headers.Field f) {
        String name = f.name();
        String value = f.value() == null ? "" : f.value().strip();
        if (name == null || !Ascii.isToken(name)) throw new IllegalArgumentException(what + " name " + Ascii.quote(String.valueOf(name)) + " is not a token");
        for (int i = 0; i < value.length(); i++) {
            char c = value.charAt(i);
            if (c == '\r' || c == '\n' || c == 0) {
                throw new IllegalArgumentException("the value of " + what + " " + name + " has a CR, LF or NUL");
            }
        }
        return value;
    }

    /**
     * The trailer section of a chunked body (§4.4, RFC 9112 §7.1.2), checked as head fields
     * are. The framing fields and the reserved AfterBurn-* fields are the library's and the
     * watchdog's, never a handler's trailer: they are dropped.
     */
    static HttpHeaders trailerFields(Headers trailers) {
        if (trailers == null) throw new NullPointerException("the trailer supplier returned null (use Headers.empty())");
        HttpHeaders t = TRAILERS.newHeaders();
        for (Headers.Field f : trailers) {
            String value = checkedValue("response trailer", f);
            String name = f.name();
            if (name.equalsIgnoreCase("Content-Length") || name.equalsIgnoreCase("Transfer-Encoding")
                    || name.equalsIgnoreCase("Trailer") || name.regionMatches(true, 0, "AfterBurn-", 0, 10)) {
                continue;
            }
            t.add(name, value);
        }
        return t;
    }

    private void encode(Object message) throws IOException {
        encoder.encodeTo(message, sink);
    }

    /** The stream given to a {@link BodyWriter}. */
    private final class BodyStream extends OutputStream {
        private final DefaultHttpResponse head;
        private final Supplier<Headers> trailers; // null: none
        private final byte[] buf;
        private final byte[] chunkLine = {0, 0, 0, 0, 0, 0, 0, 0, '\r', '\n'}; // up to 8 hex digits, CRLF
        private int len;
        private boolean closed;

        BodyStream(DefaultHttpResponse head, Supplier<Headers> trailers) {
            this.head = head;
            this.trailers = trailers;
            if (streamBuffer == null) streamBuffer = new byte[STREAM_BUFFER];
            this.buf = streamBuffer;
        }

        @Override
        public void write(int b) throws IOException {
            if (len < buf.length && !closed && (declaredLength < 0 || written < declaredLength)) {
                written++;
                if (!bodyless) buf[len++] = (byte) b;
                return;
            }
            write(new byte[] {(byte) b}, 0, 1); // the checks and errors of the general case
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
            boolean large = n >= buf.length / 2;
            if (!large && n <= buf.length - len) {
                System.arraycopy(b, off, buf, len, n);
                len += n;
                return;
            }
            sendBuffered();
            if (large) {
                send(b, off, n); // a chunk of its own, straight from the caller's array
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

        /**
         * Ends the body: the last chunk with the trailer section, or a check that the declared
         * length was written. The trailers are asked for first, so that a supplier that fails
         * while the whole body is still buffered leaves the response unsent (a {@code 500}).
         */
        @Override
        public void close() throws IOException {
            if (closed) return;
            closed = true;
            LastHttpContent last = LastHttpContent.EMPTY_LAST_CONTENT;
            if (trailers != null && chunked) {
                HttpHeaders t = trailerFields(trailers.get());
                if (!t.isEmpty()) last = new DefaultLastHttpContent(Unpooled.EMPTY_BUFFER, t);
            }
            sendBuffered();
            encode(last);
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

        /**
         * One piece of the body, framed here rather than by Netty's encoder: a chunk is its
         * size in hex, CRLF, the bytes, CRLF (RFC 9112 §7.1), and a body of declared length
         * is the bytes as they are. Per piece that saves a trip through the channel pipeline
         * and its allocations; the encoder still writes the head and the last chunk, and so
         * knows where each response begins and ends.
         */
        private void send(byte[] b, int off, int n) throws IOException {
            commit();
            if (!chunked) {
                sink.write(b, off, n);
                return;
            }
            int i = chunkLine.length - 2;
            for (int v = n; ; v >>>= 4) {
                chunkLine[--i] = HEX[v & 0xf];
                if (v < 16) break;
            }
            sink.write(chunkLine, i, chunkLine.length - i);
            sink.write(b, off, n);
            sink.write(CRLF, 0, 2);
        }

        private void commit() throws IOException {
            if (!committed) {
                committed = true;
                encode(head);
            }
        }
    }
}
