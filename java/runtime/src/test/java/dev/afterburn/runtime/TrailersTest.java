package dev.afterburn.runtime;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.afterburn.runtime.WorkerTest.Run;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * Trailer fields (PROTOCOL.md §4.2, §4.4; RFC 9112 §7.1.2): the request's, known to the
 * handler once its body was read, and the response's, sent after a chunked body, checked byte
 * for byte on the serve loop and end to end through {@link TestRequest}.
 */
class TrailersTest {
    private static final String GET = "GET / HTTP/1.1\r\nHost: a\r\n\r\n";
    private static final String ERROR_500 = "HTTP/1.1 500 Internal Server Error\r\n";

    @Test
    void aStreamedResponseEndsWithItsTrailerSectionComputedAfterTheBody() {
        Run r = WorkerTest.run(req -> {
            StringBuilder seen = new StringBuilder();
            return Response.ok().header("Trailer", "X-Seen").stream(out -> {
                for (String part : new String[] {"ab", "cde"}) {
                    seen.append(part);
                    out.write(part.getBytes(StandardCharsets.US_ASCII));
                    out.flush();
                }
            }).trailers(() -> Headers.of("X-Seen", seen.toString(), "X-Seen", "twice"));
        }, GET);
        assertEquals("HTTP/1.1 200 OK\r\nTrailer: X-Seen\r\nTransfer-Encoding: chunked\r\n\r\n"
                + "2\r\nab\r\n3\r\ncde\r\n0\r\nX-Seen: abcde\r\nX-Seen: twice\r\n\r\n", r.out());
        assertEquals(Worker.Outcome.CLOSED, r.outcome());
    }

    @Test
    void aCompleteBodyWithTrailersGoesOutAsOneChunk() {
        Run r = WorkerTest.run(req -> Response.ok().body("hello".getBytes(StandardCharsets.US_ASCII))
                .trailers(() -> Headers.of("X-Done", "yes")), GET + GET);
        String one = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\nX-Done: yes\r\n\r\n";
        assertEquals(one + one, r.out());
    }

    @Test
    void noTrailersLeavesTheLastChunkBare() {
        Run r = WorkerTest.run(req -> Response.ok().stream(out -> out.write('x')).trailers(Headers::empty), GET);
        assertEquals("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nx\r\n0\r\n\r\n", r.out());
    }

    @Test
    void trailersWithADeclaredContentLengthAreAHandlerError() {
        Run r = WorkerTest.run(req -> Response.ok().header("Content-Length", "1").stream(out -> out.write('x'))
                .trailers(() -> Headers.of("X-A", "1")), GET + GET);
        assertTrue(r.out().startsWith(ERROR_500), r.out());
        assertTrue(r.logWrites().get(0).contains("trailers need a chunked body"), r.logWrites().toString());
        assertEquals(Worker.Outcome.CLOSED, r.outcome(), "answered before anything was sent: the worker serves on");
    }

    @Test
    void headAnd204SendNoTrailersAndNeverAskForThem() {
        AtomicInteger asked = new AtomicInteger();
        Handler h = req -> Response.status(req.path().equals("/nc") ? 204 : 200).body("x")
                .trailers(() -> Headers.of("X-A", Integer.toString(asked.incrementAndGet())));
        Run head = WorkerTest.run(h, "HEAD / HTTP/1.1\r\nHost: a\r\n\r\n");
        assertEquals("HTTP/1.1 200 OK\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n", head.out());
        Run noContent = WorkerTest.run(h, "GET /nc HTTP/1.1\r\nHost: a\r\n\r\n");
        assertEquals("HTTP/1.1 204 No Content\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n", noContent.out());
        assertEquals(0, asked.get());
    }

    @Test
    void framingAndReservedTrailerFieldsAreDropped() {
        Run r = WorkerTest.run(req -> Response.ok().stream(out -> out.write('x')).trailers(() -> Headers.of(
                "Content-Length", "9", "Transfer-Encoding", "chunked", "Trailer", "X-A",
                "AfterBurn-Exchange", "forged", "X-A", "kept")), GET);
        assertEquals("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nx\r\n0\r\nX-A: kept\r\n\r\n", r.out());
    }

    @Test
    void aTrailerValueWithCrlfCannotSplitTheResponse() {
        Run r = WorkerTest.run(req -> Response.ok().stream(out -> out.write('x'))
                .trailers(() -> Headers.of("X-A", "1\r\n\r\nHTTP/1.1 200 OK")), GET + GET);
        assertTrue(r.out().startsWith(ERROR_500), "the body was still buffered: a 500, " + r.out());
        assertFalse(r.out().contains("\r\nX-A"), r.out());
        assertEquals(Worker.Outcome.CLOSED, r.outcome());
    }

    @Test
    void aSupplierFailingAfterTheHeadWentOutLeavesTheBodyWithoutItsLastChunk() {
        Run r = WorkerTest.run(req -> Response.ok().stream(out -> {
            out.write('x');
            out.flush();
        }).trailers(() -> {
            throw new IllegalStateException("no checksum");
        }), GET + GET);
        assertEquals("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nx\r\n", r.out());
        assertEquals(Worker.Outcome.FAILED, r.outcome(), "§8.3");
    }

    @Test
    void requestTrailersAreEmptyUntilTheBodyWasRead() {
        Run r = WorkerTest.run(req -> {
            int before = req.trailers().size();
            String body = req.bodyText();
            return Response.ok().body(before + " " + body + " " + req.trailers().all("x-t"));
        }, "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nhi\r\n0\r\nX-T: 1\r\nx-t: 2\r\n\r\n");
        assertTrue(r.out().endsWith("\r\n\r\n0 hi [1, 2]"), r.out());
    }

    @Test
    void testRequestSendsRequestTrailersAndTestResponseShowsResponseTrailers() {
        TestResponse r = TestRequest.post("/t").body("abc").trailer("X-Checksum", "9")
                .call(req -> {
                    String body = req.bodyText();
                    String sum = req.trailers().first("x-checksum");
                    return Response.ok().body(body).trailers(() -> Headers.of("X-Echo", sum));
                });
        assertEquals(200, r.status());
        assertEquals("abc", r.bodyText());
        assertEquals("9", r.trailers().first("X-Echo"));
        assertTrue(r.complete());
        assertEquals(0, TestRequest.get("/").call(WorkerTest.HELLO).trailers().size());
    }
}
