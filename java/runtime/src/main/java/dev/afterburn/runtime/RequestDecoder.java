package dev.afterburn.runtime;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.Unpooled;
import io.netty.buffer.UnpooledByteBufAllocator;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.handler.codec.http.HttpContent;
import io.netty.handler.codec.http.HttpHeaders;
import io.netty.handler.codec.http.HttpRequest;
import io.netty.handler.codec.http.LastHttpContent;
import io.netty.util.ReferenceCountUtil;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * The core: request bytes in, {@link RequestEvent}s out. It does no I/O, so it is tested by
 * feeding it the conformance vectors, whole or one segment at a time.
 *
 * <p>Netty's decoder does the framing; this class drives its decode step directly, the way
 * Netty's {@code ByteToMessageDecoder} does on a channel, but without the channel: no
 * pipeline, promises or queues per read, which cost allocations per request and a large body
 * of code for the JIT to compile into every caller. An {@link EmbeddedChannel} only lends the
 * decoder a context. One thread, the one that calls {@link #feed}, owns it all. Events come
 * out in stream order and stay queued until taken, so the caller bounds the memory in use by
 * feeding only when the queue is empty.
 *
 * <p>No byte is copied on the way through: {@link #feed} wraps the caller's array, Netty slices
 * the body out of it, and each {@link RequestEvent.Content} is a view on that array. The
 * contract that makes this safe: the caller takes every event of a feed before it feeds again,
 * and when Netty left unconsumed bytes of a feed (part of a line, {@link #holdsInput}) leaves
 * that feed's bytes unchanged until the next feed returned. Those bytes are then joined with
 * the next read in a new buffer; no buffer a view may point at is ever written.
 */
final class RequestDecoder {
    private static final long MAX_TIMEOUT_MS = Long.MAX_VALUE / 1_000_000;

    private final EmbeddedChannel channel;
    private final ChannelHandlerContext ctx;
    private final StrictRequestDecoder decoder;
    private final ArrayDeque<RequestEvent> events = new ArrayDeque<>();
    private final List<Object> decoded = new ArrayList<>(4);
    private ByteBuf held; // bytes the decoder left unconsumed, for the next feed
    private boolean ended;

    RequestDecoder(Limits limits) {
        decoder = new StrictRequestDecoder(limits);
        channel = new EmbeddedChannel(decoder);
        channel.config().setAllocator(UnpooledByteBufAllocator.DEFAULT);
        ctx = channel.pipeline().context(decoder);
    }

    /**
     * Feeds {@code b[off, off+len)} without copying it. The events of this call must be taken
     * before the next; when {@link #holdsInput} is true afterwards, the bytes must also stay
     * unchanged until the next call has returned.
     */
    void feed(byte[] b, int off, int len) {
        if (ended || len == 0) return;
        ByteBuf in = Unpooled.wrappedBuffer(b, off, len);
        if (held != null) {
            ByteBuf joined = UnpooledByteBufAllocator.DEFAULT.heapBuffer(held.readableBytes() + len);
            joined.writeBytes(held).writeBytes(in);
            held.release();
            held = null;
            in = joined;
        }
        try {
            // As ByteToMessageDecoder.callDecode: decode while a step consumes input.
            while (in.isReadable() && !ended) {
                int before = in.readableBytes();
                try {
                    decoder.decode(ctx, in, decoded);
                } catch (Exception e) {
                    throw new IllegalStateException("afterburn: the request decoder failed", e);
                }
                convertDecoded();
                if (in.readableBytes() == before) break; // a partial line: wait for more input
            }
        } finally {
            if (in.isReadable() && !ended) {
                held = in; // the decoder needs these bytes again with the next read
            } else {
                in.release();
            }
        }
    }

    /** Whether the decoder kept bytes of the last feed for later: its array must not change yet. */
    boolean holdsInput() {
        return held != null;
    }

    /** The end of the request stream: clean between requests, a framing error inside one (§9.4). */
    void endOfInput() {
        if (ended) return;
        ended = true;
        if (decoder.failed()) return; // the failure is queued already
        if (decoder.betweenRequests()) {
            events.add(new RequestEvent.Closed());
        } else {
            events.add(new RequestEvent.Failure(ProtocolError.truncated("a request"), null, null));
        }
        if (held != null) {
            held.release();
            held = null;
        }
        channel.finishAndReleaseAll();
    }

    /** The next event, or null when more input is needed. */
    RequestEvent poll() {
        return events.poll();
    }

    private void convertDecoded() {
        try {
            for (Object m : decoded) convert(m);
        } finally {
            for (Object m : decoded) ReferenceCountUtil.release(m);
            decoded.clear();
        }
    }

    private void convert(Object m) {
        if (m instanceof RequestEvent.Failure) {
            events.add((RequestEvent) m);
            ended = true;
            return;
        }
        if (m instanceof HttpRequest) {
            events.add(head((HttpRequest) m));
        }
        if (m instanceof HttpContent) {
            ByteBuf content = ((HttpContent) m).content();
            if (content.isReadable()) events.add(content(content));
        }
        if (m instanceof LastHttpContent) {
            events.add(new RequestEvent.End(fields(((LastHttpContent) m).trailingHeaders(), false)));
        }
    }

    /** The body bytes as a view on their array; Netty's buffers here are unpooled heap buffers. */
    private static RequestEvent.Content content(ByteBuf content) {
        int n = content.readableBytes();
        if (content.hasArray()) {
            return new RequestEvent.Content(content.array(), content.arrayOffset() + content.readerIndex(), n);
        }
        return new RequestEvent.Content(ByteBufUtil.getBytes(content), 0, n);
    }

    private static RequestEvent.Head head(HttpRequest r) {
        long headRead = System.nanoTime(); // §5.2: the deadline counts from here
        HttpHeaders h = r.headers();
        String requestId = h.get("AfterBurn-Request-Id");
        String timeout = h.get("AfterBurn-Timeout-Ms"); // digits, checked by the HeadGuard (rule 13)
        long timeoutMs = timeout == null ? -1 : Ascii.saturatingDigits(timeout, MAX_TIMEOUT_MS);
        // Rule 14: at most one AfterBurn-Exchange, its value checked by the HeadGuard.
        return new RequestEvent.Head(r.method().name(), r.uri(), fields(h, true), requestId, timeoutMs,
                h.get("AfterBurn-Handshake"), h.get("AfterBurn-Exchange"), headRead);
    }

    /**
     * The fields a handler sees, in order. §5.3: AfterBurn-Request-Id and
     * AfterBurn-Timeout-Ms are exposed through the Request API instead; AfterBurn-Exchange
     * belongs to the library alone (§4.6), which copies it into the response head.
     */
    private static Headers fields(HttpHeaders h, boolean stripReserved) {
        if (h.isEmpty()) return Headers.empty();
        List<Headers.Field> list = new ArrayList<>(h.size());
        for (Map.Entry<String, String> e : h) {
            String name = e.getKey();
            if (stripReserved && (name.equalsIgnoreCase("AfterBurn-Request-Id")
                    || name.equalsIgnoreCase("AfterBurn-Timeout-Ms")
                    || name.equalsIgnoreCase("AfterBurn-Exchange"))) {
                continue;
            }
            list.add(new Headers.Field(name, e.getValue()));
        }
        return new Headers(list);
    }
}
