package dev.afterburn.runtime;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The serve loop on in-memory pipes, checked byte for byte: handshake, framing of responses,
 * errors of §8 and the lifecycle of §9.
 */
class WorkerTest {
    static final String HANDSHAKE = "OPTIONS * HTTP/1.1\r\nHost: afterburn\r\nAfterBurn-Handshake: 1\r\nContent-Length: 0\r\n\r\n";

    /** One run of the worker: what it wrote to the response pipe and to its log. */
    record Run(Worker.Outcome outcome, String out, List<String> logWrites) {}

    static Run run(Handler h, String requests) {
        return run(h, requests, Limits.DEFAULT);
    }

    static Run run(Handler h, String requests, Limits limits) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        WriteLog logStream = new WriteLog();
        Worker w = new Worker(new ByteArrayInputStream(requests.getBytes(StandardCharsets.ISO_8859_1)), out, limits, logStream);
        Worker.Outcome outcome = w.serve(h);
        return new Run(outcome, out.toString(StandardCharsets.ISO_8859_1), logStream.writes());
    }

    static final Handler HELLO = r -> Response.ok().header("Content-Type", "text/plain").body("hello".getBytes(StandardCharsets.US_ASCII));

    @Test
    void handshakeIsAnsweredWithTheExactReplyAndEofExitsCleanly() {
        Run r = run(HELLO, HANDSHAKE);
        assertEquals("HTTP/1.1 200 OK\r\nAfterBurn-Protocol: 1\r\nAfterBurn-Library: java/0.1.0\r\n"
                + "AfterBurn-Capabilities: exchange, streams\r\nAfterBurn-Streams: 256\r\nContent-Length: 0\r\n\r\n", r.out());
        assertEquals(Worker.Outcome.CLOSED, r.outcome());
    }

    @Test
    void handshakeIsRecognisedByItsFieldNotItsPositionAndNeverReachesTheHandler() {
        Run r = run(req -> { throw new AssertionError("the handshake reached the handler"); },
                "GET /x HTTP/1.1\r\nHost: a\r\nafterburn-handshake: 7, 1\r\n\r\n");
        assertTrue(r.out().startsWith("HTTP/1.1 200 OK\r\nAfterBurn-Protocol: 1\r\n"), r.out());
        assertEquals(Worker.Outcome.CLOSED, r.outcome());
    }

    @Test
    void versionMismatchIs400ListingTheVersionsSpokenThenTheWorkerStops() {
        Run r = run(HELLO, "OPTIONS * HTTP/1.1\r\nHost: afterburn\r\nAfterBurn-Handshake: 99\r\nContent-Length: 0\r\n\r\n"
                + "GET / HTTP/1.1\r\nHost: a\r\n\r\n");
        String error = "{\"type\":\"version_mismatch\",\"message\":\"the library speaks none of the offered protocol versions\"}";
        assertEquals("HTTP/1.1 400 Bad Request\r\nContent-Type: application/json\r\nAfterBurn-Error: version_mismatch\r\n"
                + "AfterBurn-Protocol: 1\r\nContent-Length: " + error.length() + "\r\n\r\n" + error, r.out());
        assertEquals(Worker.Outcome.REFUSED, r.outcome(), "§3.4: the whole worker exits");
    }

    @Test
    void completeBodyGoesOutWithContentLength() {
        Run r = run(HELLO, "GET / HTTP/1.1\r\nHost: a\r\n\r\n");
        assertEquals("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 5\r\n\r\nhello", r.out());
        assertEquals(Worker.Outcome.CLOSED, r.outcome());
    }

    @Test
    void repeatedResponseFieldsKeepEveryLineInOrder() {
        Run r = run(req -> Response.status(201).header("Set-Cookie", "a=1").header("X-One", "1").header("Set-Cookie", "b=2"),
                "GET / HTTP/1.1\r\nHost: a\r\n\r\n");
        assertEquals("HTTP/1.1 201 Created\r\nSet-Cookie: a=1\r\nX-One: 1\r\nSet-Cookie: b=2\r\nContent-Length: 0\r\n\r\n", r.out());
    }

    @Test
    void streamedBodySendsOneChunkPerFlush() {
        Run r = run(req -> Response.ok().stream(out -> {
            out.write("ab".getBytes(StandardCharsets.US_ASCII));
            out.flush();
            out.write("cde".getBytes(StandardCharsets.US_ASCII));
            out.flush();
        }), "GET / HTTP/1.1\r\nHost: a\r\n\r\n");
        assertEquals("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nab\r\n3\r\ncde\r\n0\r\n\r\n", r.out());
    }

    @Test
    void declaredContentLengthIsUsedForAStreamAndAShortBodyIsLeftIncomplete() {
        Run ok = run(req -> Response.ok().header("Content-Length", "3").stream(out -> out.write(new byte[] {'b', 'y', 'e'})),
                "GET / HTTP/1.1\r\nHost: a\r\n\r\n");
        assertEquals("HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nbye", ok.out());
        Run shortBody = run(req -> Response.ok().header("Content-Length", "10").stream(out -> out.write(new byte[] {'b'})),
                "GET / HTTP/1.1\r\nHost: a\r\n\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n");
        assertEquals("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nb", shortBody.out());
        assertEquals(Worker.Outcome.FAILED, shortBody.outcome(), "§8.3: a short body must not look complete");
    }

    @Test
    void headAnd204And304CarryNoBody() {
        Run head = run(HELLO, "HEAD / HTTP/1.1\r\nHost: a\r\n\r\n");
        assertEquals("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 5\r\n\r\n", head.out());
        Run streamedHead = run(req -> Response.ok().stream(out -> out.write(new byte[100])), "HEAD / HTTP/1.1\r\nHost: a\r\n\r\n");
        assertEquals("HTTP/1.1 200 OK\r\n\r\n", streamedHead.out());
        Run noContent = run(req -> Response.status(204).header("Content-Length", "0"), "GET / HTTP/1.1\r\nHost: a\r\n\r\n");
        assertEquals("HTTP/1.1 204 No Content\r\n\r\n", noContent.out());
        Run notModified = run(req -> Response.status(304), "GET / HTTP/1.1\r\nHost: a\r\n\r\n");
        assertEquals("HTTP/1.1 304 Not Modified\r\n\r\n", notModified.out());
    }

    @Test
    void handlerExceptionIs500HandlerErrorWithTheStackOnStderrInOneWriteAndTheWorkerKeepsServing() {
        int[] calls = {0};
        Run r = run(req -> {
            if (calls[0]++ == 0) throw new IllegalStateException("secret database password");
            return HELLO.handle(req);
        }, "GET /throw HTTP/1.1\r\nHost: a\r\nAfterBurn-Request-Id: rid-7\r\n\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n");
        String error = "{\"type\":\"handler_error\",\"message\":\"the function failed while handling the request\",\"request_id\":\"rid-7\"}";
        assertEquals("HTTP/1.1 500 Internal Server Error\r\nContent-Type: application/json\r\nAfterBurn-Error: handler_error\r\n"
                + "Content-Length: " + error.length() + "\r\n\r\n" + error
                + "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 5\r\n\r\nhello", r.out());
        assertFalse(r.out().contains("secret"), "§8.1: never the exception's message to the client");
        assertEquals(1, r.logWrites().size(), "one write: " + r.logWrites());
        String record = r.logWrites().get(0);
        assertTrue(record.startsWith("[rid-7] afterburn: handler failed on GET /throw: java.lang.IllegalStateException: secret"), record);
        assertTrue(record.contains("\tat dev.afterburn.runtime.WorkerTest"), "the stack is in the record: " + record);
        assertEquals(Worker.Outcome.CLOSED, r.outcome());
    }

    @Test
    void handlerExceptionAfterTheHeadLeavesTheChunkedResponseIncompleteAndStops() {
        Run r = run(req -> Response.ok().stream(out -> {
            out.write("partial".getBytes(StandardCharsets.US_ASCII));
            out.flush();
            throw new IOException("lost the upstream");
        }), "GET / HTTP/1.1\r\nHost: a\r\n\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n");
        assertEquals("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n7\r\npartial\r\n", r.out());
        assertEquals(Worker.Outcome.FAILED, r.outcome());
    }

    @Test
    void nullResponseIsAHandlerError() {
        Run r = run(req -> null, "GET / HTTP/1.1\r\nHost: a\r\n\r\n");
        assertTrue(r.out().startsWith("HTTP/1.1 500 Internal Server Error\r\n"), r.out());
        assertEquals(Worker.Outcome.CLOSED, r.outcome());
    }

    @Test
    void responseFieldWithCrlfCannotSplitTheResponse() {
        Run r = run(req -> Response.ok().header("X-A", "1\r\nX-Injected: yes"), "GET / HTTP/1.1\r\nHost: a\r\n\r\n");
        assertTrue(r.out().startsWith("HTTP/1.1 500 Internal Server Error\r\n"), r.out());
        assertFalse(r.out().contains("X-Injected"));
    }

    @Test
    void malformedRequestIsAnsweredThenNothingMoreIsRead() {
        Run r = run(HELLO, "GET / HTTP/1.1\r\nHost: a\r\nX-A: a\r\n b\r\n\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n");
        assertTrue(r.out().startsWith("HTTP/1.1 400 Bad Request\r\nContent-Type: application/json\r\nAfterBurn-Error: bad_request\r\n"), r.out());
        assertFalse(r.out().contains("hello"), "§8.8: never resynchronise");
        assertEquals(Worker.Outcome.FAILED, r.outcome());
    }

    @Test
    void oversizedBodyIs413BeforeTheHandlerRuns() {
        Run announced = run(req -> { throw new AssertionError("handler ran"); },
                "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 17\r\n\r\n", new Limits(4096, 16));
        assertTrue(announced.out().startsWith("HTTP/1.1 413 Content Too Large\r\n"), announced.out());
        assertTrue(announced.out().endsWith("\"type\":\"body_too_large\",\"message\":\"the request body is larger than the limit\"}"));
        assertEquals(Worker.Outcome.FAILED, announced.outcome());
    }

    @Test
    void chunkedBodyOverTheLimitIs413WhenTheHandlerReadsIt() {
        Run r = run(req -> Response.ok().body(req.bodyBytes()),
                "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n8\r\n01234567\r\n9\r\n012345678\r\n0\r\n\r\n",
                new Limits(4096, 16));
        assertTrue(r.out().startsWith("HTTP/1.1 413 Content Too Large\r\n"), r.out());
        assertEquals(Worker.Outcome.FAILED, r.outcome());
    }

    @Test
    void eofInsideABodyIsAFramingError() {
        Run r = run(req -> Response.ok().body(req.bodyBytes()), "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 10\r\n\r\nabc");
        assertTrue(r.out().startsWith("HTTP/1.1 400 Bad Request\r\n"), r.out());
        assertEquals(Worker.Outcome.FAILED, r.outcome());
    }

    @Test
    void eofInsideAnUnreadBodyIsAFramingErrorToo() {
        Run r = run(HELLO, "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 10\r\n\r\nabc");
        assertTrue(r.out().startsWith("HTTP/1.1 400 Bad Request\r\n"), "pre-drained before answering: " + r.out());
        assertEquals(Worker.Outcome.FAILED, r.outcome());
    }

    @Test
    void unreadBodyIsDrainedBeforeTheNextRequest() {
        Run r = run(req -> Response.ok().body(req.path().getBytes(StandardCharsets.US_ASCII)),
                "POST /a HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nGET /bPOST /c HTTP/1.1\r\nHost: a\r\n\r\n");
        assertEquals("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n/a" + "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n/c", r.out());
    }

    @Test
    void closedResponsePipeStopsTheWorker() {
        OutputStream closed = new OutputStream() {
            @Override
            public void write(int b) throws IOException {
                throw new IOException("Broken pipe");
            }
        };
        Worker w = new Worker(new ByteArrayInputStream(HANDSHAKE.getBytes(StandardCharsets.ISO_8859_1)), closed,
                Limits.DEFAULT, OutputStream.nullOutputStream());
        assertEquals(Worker.Outcome.FAILED, w.serve(HELLO));
    }

    @Test
    void brokenRequestPipeEndsTheStreamLikeEof() {
        InputStream broken = new InputStream() {
            @Override
            public int read() throws IOException {
                throw new IOException("Input/output error");
            }
        };
        Worker w = new Worker(broken, new ByteArrayOutputStream(), Limits.DEFAULT, OutputStream.nullOutputStream());
        assertEquals(Worker.Outcome.CLOSED, w.serve(HELLO));
    }

    @Test
    void requestMetadataIsExposedAndStrippedFromTheFields() {
        Request[] seen = new Request[1];
        run(req -> {
            seen[0] = req;
            return HELLO.handle(req);
        }, "GET /p?q=1 HTTP/1.1\r\nHost: a\r\nAfterBurn-Request-Id: rid-1\r\nAfterBurn-Timeout-Ms: 5000\r\nX-A: 1\r\n\r\n");
        Request req = seen[0];
        assertEquals("rid-1", req.requestId());
        assertEquals("/p", req.path());
        assertEquals("q=1", req.query());
        assertTrue(req.hasDeadline());
        assertTrue(req.timeRemaining().toMillis() <= 5000);
        assertEquals(List.of(new Headers.Field("Host", "a"), new Headers.Field("X-A", "1")), req.headers().fields());
    }

    @Test
    void theRequestLogTagsEachLineWithTheRequestIdInOneWrite() {
        Run r = run(req -> {
            req.log("cache miss");
            return HELLO.handle(req);
        }, "GET / HTTP/1.1\r\nHost: a\r\nAfterBurn-Request-Id: rid-9\r\n\r\n");
        assertEquals(List.of("[rid-9] cache miss\n"), r.logWrites(), "§2.5: a line attributable to its request");
    }

    @Test
    void withoutAWatchdogIdTheLibraryMakesOneAndThereIsNoDeadline() {
        Request[] seen = new Request[1];
        run(req -> {
            seen[0] = req;
            return HELLO.handle(req);
        }, "GET / HTTP/1.1\r\nHost: a\r\n\r\n");
        assertTrue(seen[0].requestId().matches("[0-9a-f]{32}"), seen[0].requestId());
        assertFalse(seen[0].hasDeadline());
        assertTrue(seen[0].timeRemaining().getSeconds() > 1_000_000_000L);
    }

    @Test
    void bodyIsNotReadableAfterTheExchange() throws Exception {
        Request[] seen = new Request[1];
        run(req -> {
            seen[0] = req;
            return HELLO.handle(req);
        }, "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n\r\nabcGET / HTTP/1.1\r\nHost: a\r\n\r\n");
        try {
            seen[0].body().read();
            throw new AssertionError("read after the exchange succeeded");
        } catch (IOException expected) {
            assertTrue(expected.getMessage().contains("after the exchange ended"));
        }
    }

    @Test
    void trailersAreKnownOnceTheBodyWasRead() {
        Run r = run(req -> {
            String body = req.bodyText();
            return Response.ok().body(body + " " + req.trailers().first("x-checksum"));
        }, "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\nX-Checksum: 9\r\n\r\n");
        assertTrue(r.out().endsWith("\r\n\r\nabc 9"), r.out());
    }
}
