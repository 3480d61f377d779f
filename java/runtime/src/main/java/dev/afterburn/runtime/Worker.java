package dev.afterburn.runtime;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.security.SecureRandom;
import java.util.HexFormat;

/**
 * The serve loop: one exchange after another on one lane's two pipes (PROTOCOL.md §2.1,
 * §4.1), until the request stream ends between requests (§9.4) or can no longer be trusted
 * (§8.8). A worker with several lanes (§2.5) runs one of these per lane ({@link Lanes}); they
 * share only the handler and the {@link Cancellations}.
 *
 * <p>One thread does everything for its lane: it reads the request pipe only when the core has no event
 * left, calls the handler, and writes the response. A handler that reads its body pulls the
 * next bytes from the pipe itself, so the body streams with bounded memory while the
 * response is being written (§6.1, §6.2), with no second thread and no hand-off.
 */
final class Worker {
    static final String PROTOCOL_VERSION = "1";
    static final String LIBRARY = "java/0.1.0";

    /**
     * §3.2: the fields of the handshake reply. The library copies every request's
     * AfterBurn-Exchange into its response (§4.6), so it lists {@code exchange}; it serves
     * lanes (§2.5), so it lists {@code streams} and says how many it serves at most, always,
     * also when the watchdog gave it one lane (the watchdog then ignores it).
     */
    static String handshakeFields(int maxLanes) {
        return "AfterBurn-Protocol: " + PROTOCOL_VERSION + "\r\n"
                + "AfterBurn-Library: " + LIBRARY + "\r\n"
                + "AfterBurn-Capabilities: exchange, streams\r\n"
                + "AfterBurn-Streams: " + maxLanes + "\r\n";
    }

    /**
     * Size of one read from the request pipe. The watchdog writes a large body in pieces of
     * 128 KiB into a pipe of 1 MiB; reading up to 256 KiB at a time takes what is there in few
     * system calls.
     */
    static final int READ_SIZE = 256 * 1024;

    /**
     * §2.5: the pipes of lanes 2 to K keep the kernel's default size, 64 KiB, and a read
     * returns no more than a pipe holds.
     */
    static final int LANE_READ_SIZE = 64 * 1024;

    /**
     * The two read buffers. The core decodes straight from them and hands out body bytes as
     * views (no copy), so the bytes of one read must stay put until the read after it was fed
     * when the core kept some of them (part of a line; RequestDecoder#feed): then the next
     * read goes to the other buffer. Memory for reads stays at two buffers whatever the size
     * of the body; the second is made when first needed.
     */
    private final byte[][] readBuffers = new byte[2][];
    private int nextBuffer;

    /**
     * How much unread request body is read before a response is sent, so that a framing
     * error in a short body is answered as one (§8.8); the rest is drained after (§6.3).
     */
    private static final long PRE_DRAIN = 256 * 1024;

    /** How {@link #serve} ended. */
    enum Outcome {
        /** The request stream ended between requests: exit 0 (§9.4). */
        CLOSED,
        /**
         * The stream can no longer be trusted: close the response pipe (§8.3, §8.8). With one
         * lane the worker exits non-zero; with several, that lane alone ends (§2.5).
         */
        FAILED,
        /** The handshake failed (§3.4): the whole worker exits non-zero. */
        REFUSED
    }

    private final InputStream in;
    private final ResponseSink sink;
    private final ResponseWriter writer;
    private final RequestDecoder decoder;
    private final OutputStream log;
    private final int readSize;
    private final String handshakeFields;
    private final Cancellations cancellations;
    private LogFormat logFormat = LogFormat.TEXT;
    private LibraryLog records; // the library's own records, in logFormat
    private RequestEvent.Failure fatal; // the framing error met while reading a body
    private boolean inputEnded;

    Worker(InputStream in, OutputStream out, Limits limits, OutputStream log) {
        this(in, out, limits, log, READ_SIZE, Lanes.DEFAULT_MAX, new Cancellations());
    }

    /**
     * One lane's serve loop (§2.5): {@code readSize} bytes per read of the request pipe,
     * {@code maxLanes} announced in the handshake reply, and the worker's cancellations,
     * shared by its lanes.
     */
    Worker(InputStream in, OutputStream out, Limits limits, OutputStream log, int readSize, int maxLanes,
           Cancellations cancellations) {
        this.in = in;
        this.sink = new ResponseSink(out);
        this.writer = new ResponseWriter(sink);
        this.decoder = new RequestDecoder(limits);
        this.log = log;
        this.readSize = readSize;
        this.handshakeFields = handshakeFields(maxLanes);
        this.cancellations = cancellations;
        this.records = new LibraryLog(log, logFormat);
    }

    /** How {@link Request#log(String)} writes its lines (AFTERBURN_LOG_FORMAT). */
    Worker logFormat(LogFormat format) {
        this.logFormat = format;
        this.records = new LibraryLog(log, format);
        return this;
    }

    Outcome serve(Handler handler) {
        try {
            while (true) {
                RequestEvent ev = nextEvent();
                if (ev instanceof RequestEvent.Closed) return Outcome.CLOSED;
                if (ev instanceof RequestEvent.Failure) {
                    RequestEvent.Failure f = (RequestEvent.Failure) ev;
                    writer.begin(false, f.exchange()); // §4.6: a head read to its end has its token
                    sendError(f.error(), f.requestId());
                    return Outcome.FAILED;
                }
                RequestEvent.Head head = (RequestEvent.Head) ev;
                if (head.handshake() != null) {
                    Outcome o = answerHandshake(head);
                    if (o != null) return o;
                } else if (!exchange(handler, head)) {
                    return Outcome.FAILED;
                }
            }
        } catch (IOException e) {
            // The response pipe broke: the watchdog is gone or gave up on this worker.
            records.error(null, "afterburn: writing the response pipe: " + e);
            return Outcome.FAILED;
        }
    }

    /** The next event of the request stream, reading the pipe when the core needs more. */
    RequestEvent nextEvent() {
        RequestEvent ev = decoder.poll();
        while (ev == null) {
            if (inputEnded) throw new IllegalStateException("afterburn: read past the end of the request stream");
            byte[] buffer = readBuffers[nextBuffer];
            if (buffer == null) buffer = readBuffers[nextBuffer] = new byte[readSize];
            int n;
            try {
                n = in.read(buffer, 0, readSize);
            } catch (IOException e) {
                n = -1; // a broken request pipe ends the stream like EOF does
            }
            if (n < 0) {
                inputEnded = true;
                decoder.endOfInput();
            } else if (n > 0) {
                decoder.feed(buffer, 0, n);
                if (decoder.holdsInput()) nextBuffer ^= 1;
            }
            ev = decoder.poll();
        }
        if (ev instanceof RequestEvent.Failure && fatal == null) fatal = (RequestEvent.Failure) ev;
        return ev;
    }

    /**
     * §3.1: the library answers the handshake itself; it never reaches the handler.
     *
     * @return null to serve on, or how the stream ended
     */
    private Outcome answerHandshake(RequestEvent.Head head) throws IOException {
        writer.begin(false, head.exchange()); // §3.5, §4.6: a repeated handshake carries a token
        BodyInputStream body = new BodyInputStream(this);
        if (!body.drain(Long.MAX_VALUE)) {
            sendError(fatal.error(), null);
            return Outcome.FAILED;
        }
        if (!offers(head.handshake(), PROTOCOL_VERSION)) {
            // §3.4: 400 version_mismatch listing the versions spoken, then exit.
            writer.sendError(400, ProtocolError.VERSION_MISMATCH, null, "AfterBurn-Protocol: " + PROTOCOL_VERSION + "\r\n");
            records.error(null, "afterburn: " + ProtocolError.versionMismatch(head.handshake()).detail());
            return Outcome.REFUSED;
        }
        writer.sendHandshakeReply(handshakeFields);
        return null;
    }

    static boolean offers(String list, String version) {
        for (String v : list.split(",", -1)) {
            if (v.strip().equals(version)) return true;
        }
        return false;
    }

    /** Runs the handler on one request and ends its response; false when the worker must stop. */
    private boolean exchange(Handler handler, RequestEvent.Head head) throws IOException {
        // §11.1: a legacy watchdog sends no request id; the library makes one.
        String id = head.requestId() != null ? head.requestId() : newRequestId();
        BodyInputStream body = new BodyInputStream(this);
        // §2.5, §5.2: the exchange's own cancellation, by its token and at its deadline.
        Cancellation cancellation = cancellations.begin(head.exchange(), head.headReadNanos(), head.timeoutMs());
        Request request = new Request(head.method(), head.target(), head.headers(), id,
                head.headReadNanos(), head.timeoutMs(), body, cancellation, log, logFormat);
        writer.begin(head.method().equals("HEAD"), head.exchange());
        long sentBefore = sink.sent();
        Throwable failure = null;
        try {
            respond(handler, request, body);
        } catch (ResponseSink.PipeException e) {
            throw e; // the watchdog is gone: nothing can be answered
        } catch (Throwable t) { // §8.3: whatever the handler threw, the worker answers
            failure = t;
        } finally {
            cancellations.end(cancellation); // the interrupt is cleared: the rest is the library's
        }
        body.endExchange();
        if (failure == null) {
            if (!writer.complete()) {
                records.error(id, "afterburn: the handler wrote less than its declared Content-Length");
                return false; // §8.3: a short body must not look complete
            }
            return drainRest(id, body);
        }
        boolean sent = sink.sent() != sentBefore;
        if (fatal == null || !(failure instanceof BodyInputStream.FramingException)) {
            logFailure(id, request, failure);
        }
        if (sent) {
            // §8.3, §8.8: the status is final and the response cannot end honestly. Leave
            // it incomplete (no last chunk, or short of its Content-Length) and stop.
            return false;
        }
        writer.discard();
        if (fatal == null) body.drain(PRE_DRAIN); // a framing error found here sets fatal
        if (fatal != null) {
            sendError(fatal.error(), id);
            return false;
        }
        sendError(500, ProtocolError.HANDLER_ERROR, id); // §8.3, and keep serving
        return drainRest(id, body);
    }

    /**
     * §6.3: reads and discards what the handler left of the body before the next request.
     * A framing error found there comes after a complete response and cannot be answered;
     * the worker stops (§8.8).
     */
    private boolean drainRest(String id, BodyInputStream body) {
        if (body.drain(Long.MAX_VALUE)) return true;
        records.error(id, "afterburn: " + ErrorBody.message(fatal.error().type) + " after the response: "
                + fatal.error().detail());
        return false;
    }

    private void respond(Handler handler, Request request, BodyInputStream body) throws Exception {
        Response response = handler.handle(request);
        if (response == null) throw new NullPointerException("the handler returned no Response");
        if (response.deferredWriter() != null) {
            DeferredStream out = new DeferredStream(writer, response);
            response.deferredWriter().writeTo(out, out);
            if (!writer.committed() && !body.drain(PRE_DRAIN) && fatal != null) {
                throw new BodyInputStream.FramingException(fatal.error());
            }
            out.close();
            return;
        }
        BodyWriter bodyWriter = response.writer();
        if (bodyWriter == null && response.trailerSupplier() != null) {
            byte[] complete = response.bodyBytes(); // trailers need a chunked body: one chunk (§4.4)
            bodyWriter = out -> out.write(complete);
        }
        if (bodyWriter == null) {
            // Read a short unread body before answering, so that a framing error in it is
            // answered as one (§8.8) rather than after a response that looks fine.
            if (!body.drain(PRE_DRAIN) && fatal != null) throw new BodyInputStream.FramingException(fatal.error());
            writer.sendComplete(response);
            return;
        }
        OutputStream out = writer.open(response);
        bodyWriter.writeTo(out);
        if (!writer.committed() && !body.drain(PRE_DRAIN) && fatal != null) {
            throw new BodyInputStream.FramingException(fatal.error());
        }
        out.close();
    }

    /**
     * §8.3: the exception and its stack go to stderr in one record that names the request
     * id; they never reach the response.
     */
    private void logFailure(String id, Request request, Throwable failure) {
        records.error(id, "afterburn: handler failed on " + request.method() + " " + request.path()
                + (request.cancelled() ? " (the exchange was cancelled, §2.5)" : "") + ": ", failure);
    }

    private void sendError(ProtocolError e, String requestId) throws IOException {
        records.error(requestId, "afterburn: " + ErrorBody.message(e.type) + ": " + e.detail());
        sendError(e.status, e.type, requestId);
    }

    private void sendError(int status, String type, String requestId) throws IOException {
        writer.sendError(status, type, requestId, "");
    }

    /** Closes the response pipe; the watchdog then sees EOF after what was sent. */
    void close() {
        try {
            sink.close();
        } catch (IOException ignored) {
            // the watchdog went away first
        }
    }

    /** Made on first use: most watchdogs send an id, and seeding costs start-up time. */
    private static final class Random {
        static final SecureRandom INSTANCE = new SecureRandom();
    }

    /** A request id as the watchdog makes them: 128 random bits as 32 lower-case hex digits (§5.1). */
    static String newRequestId() {
        byte[] b = new byte[16];
        Random.INSTANCE.nextBytes(b);
        return HexFormat.of().formatHex(b);
    }
}
