package dev.afterburn.runtime;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Exchange tokens (PROTOCOL.md §4.6): every head written for a request that carried
 * AfterBurn-Exchange carries it back, whoever made the response, and no other head does.
 * Byte-exact on in-memory pipes; the {@code exchange/} vectors run in {@link ExchangeVectorsTest}.
 */
class ExchangeTest {
    private static final String GET_T1 = "GET / HTTP/1.1\r\nHost: a\r\nAfterBurn-Exchange: T1\r\n\r\n";

    private static WorkerTest.Run run(Handler h, String requests) {
        return WorkerTest.run(h, requests);
    }

    @Test
    void aHandlersCompleteResponseCarriesTheToken() {
        WorkerTest.Run r = run(WorkerTest.HELLO, GET_T1);
        assertEquals("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nAfterBurn-Exchange: T1\r\nContent-Length: 5\r\n\r\nhello",
                r.out());
    }

    @Test
    void theHandlerErrorCarriesTheTokenAndTheNextRequestItsOwn() {
        int[] calls = {0};
        WorkerTest.Run r = run(req -> {
            if (calls[0]++ == 0) throw new IllegalStateException("boom");
            return WorkerTest.HELLO.handle(req);
        }, "GET /throw HTTP/1.1\r\nHost: a\r\nAfterBurn-Request-Id: rid\r\nAfterBurn-Exchange: c3\r\n\r\n"
                + "GET / HTTP/1.1\r\nHost: a\r\nAfterBurn-Exchange: c4\r\n\r\n");
        String error = "{\"type\":\"handler_error\",\"message\":\"the function failed while handling the request\",\"request_id\":\"rid\"}";
        assertEquals("HTTP/1.1 500 Internal Server Error\r\nContent-Type: application/json\r\nAfterBurn-Error: handler_error\r\n"
                + "AfterBurn-Exchange: c3\r\nContent-Length: " + error.length() + "\r\n\r\n" + error
                + "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nAfterBurn-Exchange: c4\r\nContent-Length: 5\r\n\r\nhello", r.out());
        assertEquals(Worker.Outcome.CLOSED, r.outcome());
    }

    @Test
    void aHandlerErrorAfterAStreamStartedToWriteIsDroppedForTheErrorWhichCarriesTheToken() {
        // Nothing reached the pipe before the throw: the 500 replaces the response (§8.3).
        WorkerTest.Run r = run(req -> Response.ok().header("X-A", "1").stream(out -> {
            out.write('x');
            throw new IOException("lost the upstream");
        }), GET_T1);
        assertTrue(r.out().startsWith("HTTP/1.1 500 Internal Server Error\r\n"), r.out());
        assertEquals(1, count(r.out(), "AfterBurn-Exchange: T1\r\n"), r.out());
        assertFalse(r.out().contains("X-A"), r.out());
    }

    @Test
    void aStreamedResponseCarriesTheTokenInItsHead() {
        WorkerTest.Run r = run(req -> Response.ok().stream(out -> {
            out.write("ab".getBytes(StandardCharsets.US_ASCII));
            out.flush();
        }), "GET / HTTP/1.1\r\nHost: a\r\nAfterBurn-Exchange: d5\r\n\r\n");
        assertEquals("HTTP/1.1 200 OK\r\nAfterBurn-Exchange: d5\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nab\r\n0\r\n\r\n", r.out());
    }

    @Test
    void aStreamWithADeclaredLengthCarriesTheToken() {
        WorkerTest.Run r = run(req -> Response.ok().header("Content-Length", "3").stream(out -> out.write(new byte[] {'b', 'y', 'e'})),
                GET_T1);
        assertEquals("HTTP/1.1 200 OK\r\nContent-Length: 3\r\nAfterBurn-Exchange: T1\r\n\r\nbye", r.out());
    }

    @Test
    void bodilessResponsesCarryTheToken() {
        WorkerTest.Run head = run(WorkerTest.HELLO, "HEAD / HTTP/1.1\r\nHost: a\r\nAfterBurn-Exchange: e6\r\n\r\n");
        assertEquals("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nAfterBurn-Exchange: e6\r\nContent-Length: 5\r\n\r\n", head.out());
        WorkerTest.Run streamedHead = run(req -> Response.ok().stream(out -> out.write(new byte[100])),
                "HEAD / HTTP/1.1\r\nHost: a\r\nAfterBurn-Exchange: e6\r\n\r\n");
        assertEquals("HTTP/1.1 200 OK\r\nAfterBurn-Exchange: e6\r\n\r\n", streamedHead.out());
        WorkerTest.Run noContent = run(req -> Response.status(204), "GET / HTTP/1.1\r\nHost: a\r\nAfterBurn-Exchange: e7\r\n\r\n");
        assertEquals("HTTP/1.1 204 No Content\r\nAfterBurn-Exchange: e7\r\n\r\n", noContent.out());
        WorkerTest.Run streamed204 = run(req -> Response.status(204).stream(out -> { }),
                "GET / HTTP/1.1\r\nHost: a\r\nAfterBurn-Exchange: e7\r\n\r\n");
        assertEquals("HTTP/1.1 204 No Content\r\nAfterBurn-Exchange: e7\r\n\r\n", streamed204.out());
        WorkerTest.Run notModified = run(req -> Response.status(304), "GET / HTTP/1.1\r\nHost: a\r\nAfterBurn-Exchange: e8\r\n\r\n");
        assertEquals("HTTP/1.1 304 Not Modified\r\nAfterBurn-Exchange: e8\r\n\r\n", notModified.out());
    }

    @Test
    void aRepeatedHandshakeIsAnsweredWithItsTokenTheFirstWithNone() {
        WorkerTest.Run r = run(WorkerTest.HELLO, WorkerTest.HANDSHAKE
                + "OPTIONS * HTTP/1.1\r\nHost: afterburn\r\nAfterBurn-Handshake: 1\r\nAfterBurn-Exchange: f9\r\nContent-Length: 0\r\n\r\n");
        String fields = "AfterBurn-Protocol: 1\r\nAfterBurn-Library: java/0.1.0\r\nAfterBurn-Capabilities: exchange, streams\r\nAfterBurn-Streams: 256\r\n";
        assertEquals("HTTP/1.1 200 OK\r\n" + fields + "Content-Length: 0\r\n\r\n"
                + "HTTP/1.1 200 OK\r\n" + fields + "AfterBurn-Exchange: f9\r\nContent-Length: 0\r\n\r\n", r.out());
        assertEquals(Worker.Outcome.CLOSED, r.outcome());
    }

    @Test
    void aVersionMismatchCarriesTheToken() {
        WorkerTest.Run r = run(WorkerTest.HELLO,
                "OPTIONS * HTTP/1.1\r\nHost: afterburn\r\nAfterBurn-Handshake: 9\r\nAfterBurn-Exchange: v1\r\nContent-Length: 0\r\n\r\n");
        assertTrue(r.out().startsWith("HTTP/1.1 400 Bad Request\r\n"), r.out());
        assertTrue(r.out().contains("\r\nAfterBurn-Protocol: 1\r\nAfterBurn-Exchange: v1\r\nContent-Length: "), r.out());
        assertEquals(Worker.Outcome.REFUSED, r.outcome(), "§3.4: the whole worker exits");
    }

    @Test
    void theHandlerCannotOverrideOrAddTheToken() {
        Handler forger = req -> Response.ok().header("afterburn-exchange", "forged").header("AfterBurn-Exchange", "x")
                .body("ok".getBytes(StandardCharsets.US_ASCII));
        WorkerTest.Run with = run(forger, GET_T1);
        assertEquals("HTTP/1.1 200 OK\r\nAfterBurn-Exchange: T1\r\nContent-Length: 2\r\n\r\nok", with.out());
        WorkerTest.Run without = run(forger, "GET / HTTP/1.1\r\nHost: a\r\n\r\n");
        assertEquals("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", without.out(), "§4.6: no token, no field");
        Handler streamingForger = req -> Response.ok().header("AfterBurn-Exchange", "forged").stream(out -> out.write('k'));
        assertEquals("HTTP/1.1 200 OK\r\nAfterBurn-Exchange: T1\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nk\r\n0\r\n\r\n",
                run(streamingForger, GET_T1).out());
    }

    @Test
    void aTokenDoesNotOutliveItsExchange() {
        int[] calls = {0};
        WorkerTest.Run r = run(req -> {
            if (calls[0]++ == 1) throw new IllegalStateException("boom");
            return Response.status(204);
        }, GET_T1 + "GET / HTTP/1.1\r\nHost: a\r\n\r\n" + "GET / HTTP/1.1\r\nHost: a\r\n\r\n");
        assertEquals(1, count(r.out(), "AfterBurn-Exchange"), r.out());
        assertTrue(r.out().startsWith("HTTP/1.1 204 No Content\r\nAfterBurn-Exchange: T1\r\n\r\n"), r.out());
        WorkerTest.Run failure = run(WorkerTest.HELLO, GET_T1 + "GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n");
        assertTrue(failure.out().contains("HTTP/1.1 400 Bad Request"), failure.out());
        assertEquals(1, count(failure.out(), "AfterBurn-Exchange"), "the rejection is of the second request: " + failure.out());
    }

    @Test
    void theHandlerNeverSeesTheToken() {
        Request[] seen = new Request[1];
        run(req -> {
            seen[0] = req;
            return WorkerTest.HELLO.handle(req);
        }, "GET / HTTP/1.1\r\nHost: a\r\nafterburn-EXCHANGE: T1\r\nX-A: 1\r\n\r\n");
        assertEquals(List.of(new Headers.Field("Host", "a"), new Headers.Field("X-A", "1")), seen[0].headers().fields());
    }

    @Test
    void aTypedHandlersBadInputAnswerCarriesTheToken() {
        record In(int n) {}
        Handler h = AfterBurn.jsonHandler(new ObjectMapper(), In.class, in -> in);
        WorkerTest.Run r = run(h, "POST / HTTP/1.1\r\nHost: a\r\nAfterBurn-Exchange: j1\r\nContent-Length: 3\r\n\r\n{x}");
        assertTrue(r.out().startsWith("HTTP/1.1 400 Bad Request\r\n"), r.out());
        assertTrue(r.out().contains("\r\nAfterBurn-Exchange: j1\r\n"), r.out());
    }

    @Test
    void aRejectionAfterTheHeadCarriesTheTokenOneInsideTheHeadDoesNot() {
        // §4.6 SHOULD: the head was read, so the rejection is known to answer this exchange.
        WorkerTest.Run body = run(WorkerTest.HELLO,
                "POST / HTTP/1.1\r\nHost: a\r\nAfterBurn-Exchange: b1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n");
        assertTrue(body.out().startsWith("HTTP/1.1 400 Bad Request\r\n"), body.out());
        assertTrue(body.out().contains("\r\nAfterBurn-Exchange: b1\r\n"), body.out());
        WorkerTest.Run tooLarge = WorkerTest.run(WorkerTest.HELLO,
                "POST / HTTP/1.1\r\nHost: a\r\nAfterBurn-Exchange: b2\r\nContent-Length: 17\r\n\r\n", new Limits(4096, 16));
        assertTrue(tooLarge.out().startsWith("HTTP/1.1 413 Content Too Large\r\n"), tooLarge.out());
        assertTrue(tooLarge.out().contains("\r\nAfterBurn-Exchange: b2\r\n"), tooLarge.out());
        WorkerTest.Run inHead = run(WorkerTest.HELLO, "GET / HTTP/1.1\r\nHost: a\r\nAfterBurn-Exchange: b3\r\nX-A: a\r\n b\r\n\r\n");
        assertTrue(inHead.out().startsWith("HTTP/1.1 400 Bad Request\r\n"), inHead.out());
        assertFalse(inHead.out().contains("AfterBurn-Exchange"), inHead.out());
        WorkerTest.Run twice = run(WorkerTest.HELLO,
                "GET / HTTP/1.1\r\nHost: a\r\nAfterBurn-Exchange: b4\r\nAfterBurn-Exchange: b4\r\n\r\n");
        assertTrue(twice.out().startsWith("HTTP/1.1 400 Bad Request\r\n"), twice.out());
        assertFalse(twice.out().contains("AfterBurn-Exchange"), "rule 14: no token to trust: " + twice.out());
    }

    @Test
    void theCoreKeepsTheTokenWithTheHeadNotItsFields() {
        RequestDecoder core = new RequestDecoder(Limits.DEFAULT);
        byte[] b = "GET / HTTP/1.1\r\nHost: a\r\nAfterBurn-Exchange: Zz09\r\n\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n"
                .getBytes(StandardCharsets.ISO_8859_1);
        core.feed(b, 0, b.length);
        RequestEvent.Head first = (RequestEvent.Head) core.poll();
        assertEquals("Zz09", first.exchange());
        assertNull(first.headers().first("AfterBurn-Exchange"));
        core.poll(); // its end
        assertNull(((RequestEvent.Head) core.poll()).exchange());
    }

    /**
     * §4.6 SHOULD: a head and a small response leave in one write of at most PIPE_BUF, so a
     * stray writer's bytes cannot land inside them. The worker's output stream is the pipe:
     * each call on it is one write(2) (FileOutputStream writes a whole array in one call).
     */
    @Test
    void eachHeadAndASmallResponseLeaveInOneWrite() {
        List<byte[]> writes = new ArrayList<>();
        OutputStream pipe = new OutputStream() {
            @Override
            public void write(int b) {
                writes.add(new byte[] {(byte) b});
            }

            @Override
            public void write(byte[] b, int off, int len) {
                writes.add(java.util.Arrays.copyOfRange(b, off, off + len));
            }
        };
        int[] calls = {0};
        Handler h = req -> {
            switch (calls[0]++) {
                case 0: return WorkerTest.HELLO.handle(req);
                case 1: throw new IllegalStateException("boom");
                default: return Response.ok().stream(out -> {
                    out.write("first".getBytes(StandardCharsets.US_ASCII));
                    out.flush();
                    out.write("second".getBytes(StandardCharsets.US_ASCII));
                    out.flush();
                });
            }
        };
        String requests = WorkerTest.HANDSHAKE + GET_T1 + GET_T1.replace("T1", "T2") + GET_T1.replace("T1", "T3");
        Worker w = new Worker(new ByteArrayInputStream(requests.getBytes(StandardCharsets.ISO_8859_1)), pipe, Limits.DEFAULT,
                OutputStream.nullOutputStream());
        assertEquals(Worker.Outcome.CLOSED, w.serve(h));
        List<String> got = new ArrayList<>();
        for (byte[] b : writes) got.add(new String(b, StandardCharsets.ISO_8859_1));
        assertEquals(6, got.size(), "handshake, 200, 500, stream head with its first chunk, second chunk, last chunk: " + got);
        assertTrue(got.get(0).startsWith("HTTP/1.1 200 OK\r\nAfterBurn-Protocol: 1\r\n") && got.get(0).endsWith("\r\n\r\n"), got.get(0));
        assertTrue(got.get(1).startsWith("HTTP/1.1 200 OK\r\n") && got.get(1).endsWith("\r\n\r\nhello"), got.get(1));
        assertTrue(got.get(2).startsWith("HTTP/1.1 500 ") && got.get(2).endsWith("}"), got.get(2));
        assertTrue(got.get(3).startsWith("HTTP/1.1 200 OK\r\nAfterBurn-Exchange: T3\r\n") && got.get(3).endsWith("\r\n\r\n5\r\nfirst\r\n"),
                got.get(3));
        for (String s : got) assertTrue(s.length() <= 4096, "at most PIPE_BUF: " + s.length());
    }

    private static int count(String s, String part) {
        int n = 0;
        for (int i = s.indexOf(part); i >= 0; i = s.indexOf(part, i + 1)) n++;
        return n;
    }
}
