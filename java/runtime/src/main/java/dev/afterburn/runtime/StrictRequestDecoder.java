package dev.afterburn.runtime;

import io.netty.buffer.ByteBuf;
import io.netty.channel.ChannelHandlerContext;
import io.netty.handler.codec.TooLongFrameException;
import io.netty.handler.codec.http.HttpDecoderConfig;
import io.netty.handler.codec.http.HttpObject;
import io.netty.handler.codec.http.HttpRequest;
import io.netty.handler.codec.http.HttpRequestDecoder;
import io.netty.handler.codec.http.LastHttpContent;
import io.netty.util.ReferenceCountUtil;
import java.util.List;

/**
 * Netty's {@link HttpRequestDecoder}, held to PROTOCOL.md §4.3.
 *
 * <p>Netty frames every request: request line, fields, Content-Length and chunked bodies,
 * chunk sizes and trailers. Around each of its decode steps this class sees which bytes
 * the step consumed and which messages it produced, and adds what §4.3 asks beyond Netty:
 * the head's bytes go through a {@link HeadGuard} before the decoded request is let
 * through, and the bytes of a chunked body through a {@link ChunkGuard}. A failure,
 * Netty's or a guard's, is passed on as one {@link RequestEvent.Failure} message, after
 * which every further byte is discarded: the stream cannot be trusted any more and is
 * never resynchronised (§8.8).
 *
 * <p>Netty ends each decode step right after it produced a request head or the last
 * content of a body, so the consumed bytes of one step never mix a head with a body.
 */
final class StrictRequestDecoder extends HttpRequestDecoder {
    private final Limits limits;
    private final HeadGuard guard;
    private final ChunkGuard chunks;
    private boolean inHead = true;
    private boolean chunkedBody;
    private boolean failed;
    private int unconsumed; // bytes Netty left in its buffer after the last step
    private int passed; // messages of the current step that passed every check

    StrictRequestDecoder(Limits limits) {
        super(config(limits));
        this.limits = limits;
        this.guard = new HeadGuard(limits.maxHead(), limits.maxBody());
        this.chunks = new ChunkGuard(limits.maxHead(), limits.maxBody());
    }

    private static HttpDecoderConfig config(Limits limits) {
        // The guard enforces §7.3's head limit to the byte; Netty's own limits are only a
        // backstop and must never trip first, so they get the slack Netty's counting needs.
        int backstop = limits.maxHead() + 1024;
        return new HttpDecoderConfig()
                .setMaxInitialLineLength(backstop)
                .setMaxHeaderSize(backstop)
                .setMaxChunkSize(1 << 20) // a body piece is a view on one read (RequestDecoder), not a copy
                .setChunkedSupported(true)
                .setAllowPartialChunks(true) // stream large chunks as they arrive (§6.1)
                .setAllowDuplicateContentLengths(false) // rule 6
                .setValidateHeaders(true)
                .setStrictLineParsing(true); // rule 1
    }

    /** Whether EOF now falls between two requests (§9.4), not inside one. */
    boolean betweenRequests() {
        return !failed && inHead && guard.idle() && unconsumed == 0;
    }

    boolean failed() {
        return failed;
    }

    /** One decode step; {@link RequestDecoder} calls it directly (see there). */
    @Override
    protected void decode(ChannelHandlerContext ctx, ByteBuf in, List<Object> out) throws Exception {
        if (failed) {
            in.skipBytes(in.readableBytes());
            unconsumed = 0;
            return;
        }
        int start = in.readerIndex();
        int first = out.size();
        passed = first;
        super.decode(ctx, in, out);
        ProtocolError error = null;
        try {
            error = check(in, start, out, first);
        } catch (ProtocolError e) {
            error = e;
        }
        if (error != null) {
            failed = true;
            String requestId = guard.requestId();
            String exchange = guard.exchange();
            // The messages before the fault stand: §4.3 answers the first fault in byte order,
            // so a request that ended before it is served whatever the split into reads.
            for (int i = out.size() - 1; i >= passed; i--) {
                ReferenceCountUtil.release(out.remove(i));
            }
            in.skipBytes(in.readableBytes());
            out.add(new RequestEvent.Failure(error, requestId, exchange));
        }
        unconsumed = in.readableBytes();
    }

    private ProtocolError check(ByteBuf in, int start, List<Object> out, int first) throws ProtocolError {
        boolean headStep = inHead;
        if (inHead) {
            scan(guard::feed, in, start, in.readerIndex());
        } else if (chunkedBody) {
            scan(chunks::feed, in, start, in.readerIndex());
        }
        for (int i = first; i < out.size(); i++) {
            Object m = out.get(i);
            if (m instanceof HttpObject && ((HttpObject) m).decoderResult().isFailure()) {
                return nettyFailure(((HttpObject) m).decoderResult().cause(), m instanceof HttpRequest);
            }
            if (m instanceof HttpRequest) {
                if (!guard.complete()) {
                    throw ProtocolError.badRequest("the decoder produced a request before the end of its head");
                }
                inHead = false;
                chunkedBody = guard.chunked();
                chunks.reset();
            }
            if (m instanceof LastHttpContent) {
                inHead = true;
                chunkedBody = false;
                guard.reset();
            }
        }
        if (inHead && headStep && in.isReadable()) {
            // A fault here is in the next request: what this step produced (a bodiless
            // request, head and end) came before it and stands.
            passed = out.size();
            checkPendingLine(in);
        }
        return null;
    }

    /**
     * Rules 1 and 11 as bytes arrive: Netty leaves a line in its buffer until the line's LF
     * comes, so the guard also looks at those bytes, up to the first LF or the limit.
     */
    private void checkPendingLine(ByteBuf in) throws ProtocolError {
        int window = Math.min(in.readableBytes(), limits.maxHead() + 2);
        scan((b, from, to) -> {
            guard.checkPending(b, from, to);
            return to;
        }, in, in.readerIndex(), in.readerIndex() + window);
    }

    /** Something that checks raw bytes {@code b[from, to)} in stream order. */
    private interface RawCheck {
        int feed(byte[] b, int from, int to) throws ProtocolError;
    }

    private static void scan(RawCheck check, ByteBuf in, int from, int to) throws ProtocolError {
        if (from == to) return;
        if (in.hasArray()) {
            int base = in.arrayOffset();
            check.feed(in.array(), base + from, base + to);
        } else {
            byte[] copy = new byte[to - from];
            in.getBytes(from, copy);
            check.feed(copy, 0, copy.length);
        }
    }

    /** Maps a failure Netty found to its §4.3 rule; a too-long head is 431 (rule 11). */
    private ProtocolError nettyFailure(Throwable cause, boolean inHead) {
        if (cause instanceof TooLongFrameException) {
            return inHead
                    ? ProtocolError.headersTooLarge(limits.maxHead())
                    : ProtocolError.badRequest("the trailer section or a chunk line is too long");
        }
        return ProtocolError.badRequest("malformed request: " + cause);
    }
}
