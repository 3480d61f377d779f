package dev.afterburn.runtime;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.UnpooledByteBufAllocator;
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
 * <p>Netty's decoder runs on an {@link EmbeddedChannel}: no socket, no event loop, just the
 * pipeline, driven by the thread that calls {@link #feed}. That one thread owns the channel
 * (EmbeddedChannel is not thread-safe). Events come out in stream order and stay queued until
 * taken, so the caller bounds the memory in use by feeding only when the queue is empty.
 */
final class RequestDecoder {
    private static final long MAX_TIMEOUT_MS = Long.MAX_VALUE / 1_000_000;

    private final EmbeddedChannel channel;
    private final StrictRequestDecoder decoder;
    private final ArrayDeque<RequestEvent> events = new ArrayDeque<>();
    private boolean ended;

    RequestDecoder(Limits limits) {
        decoder = new StrictRequestDecoder(limits);
        channel = new EmbeddedChannel(decoder);
        channel.config().setAllocator(UnpooledByteBufAllocator.DEFAULT);
    }

    /** Feeds a copy of {@code b[off, off+len)}: the decoder may keep bytes it cannot use yet. */
    void feed(byte[] b, int off, int len) {
        if (ended || len == 0) return;
        ByteBuf buf = UnpooledByteBufAllocator.DEFAULT.heapBuffer(len, len);
        buf.writeBytes(b, off, len);
        channel.writeInbound(buf);
        drainChannel();
    }

    /** The end of the request stream: clean between requests, a framing error inside one (§9.4). */
    void endOfInput() {
        if (ended) return;
        ended = true;
        if (decoder.failed()) return; // the failure is queued already
        if (decoder.betweenRequests()) {
            events.add(new RequestEvent.Closed());
        } else {
            events.add(new RequestEvent.Failure(ProtocolError.truncated("a request"), null));
        }
        channel.finishAndReleaseAll();
    }

    /** The next event, or null when more input is needed. */
    RequestEvent poll() {
        return events.poll();
    }

    private void drainChannel() {
        Object m;
        while ((m = channel.readInbound()) != null) {
            try {
                convert(m);
            } finally {
                ReferenceCountUtil.release(m);
            }
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
            if (content.isReadable()) events.add(new RequestEvent.Content(ByteBufUtil.getBytes(content)));
        }
        if (m instanceof LastHttpContent) {
            events.add(new RequestEvent.End(fields(((LastHttpContent) m).trailingHeaders(), false)));
        }
    }

    private static RequestEvent.Head head(HttpRequest r) {
        long headRead = System.nanoTime(); // §5.2: the deadline counts from here
        HttpHeaders h = r.headers();
        String requestId = h.get("AfterBurn-Request-Id");
        String timeout = h.get("AfterBurn-Timeout-Ms"); // digits, checked by the HeadGuard (rule 13)
        long timeoutMs = timeout == null ? -1 : Ascii.saturatingDigits(timeout, MAX_TIMEOUT_MS);
        return new RequestEvent.Head(r.method().name(), r.uri(), fields(h, true), requestId, timeoutMs,
                h.get("AfterBurn-Handshake"), headRead);
    }

    /**
     * The fields a handler sees, in order. §5.3: AfterBurn-Request-Id and
     * AfterBurn-Timeout-Ms are exposed through the Request API instead.
     */
    private static Headers fields(HttpHeaders h, boolean stripReserved) {
        if (h.isEmpty()) return Headers.empty();
        List<Headers.Field> list = new ArrayList<>(h.size());
        for (Map.Entry<String, String> e : h) {
            String name = e.getKey();
            if (stripReserved && (name.equalsIgnoreCase("AfterBurn-Request-Id")
                    || name.equalsIgnoreCase("AfterBurn-Timeout-Ms"))) {
                continue;
            }
            list.add(new Headers.Field(name, e.getValue()));
        }
        return new Headers(list);
    }
}
