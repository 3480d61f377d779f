package dev.afterburn.runtime;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

/** Response.deferred: a head decided while the body is written (what a servlet container needs). */
class DeferredResponseTest {
    private static byte[] ascii(String s) {
        return s.getBytes(StandardCharsets.US_ASCII);
    }

    @Test
    void theHeadSetBeforeTheFirstByteIsTheOneSent() {
        TestResponse r = TestRequest.get("/").call(req -> Response.deferred((head, out) -> {
            head.status(201);
            head.header("Content-Type", "text/plain");
            head.header("Set-Cookie", "a=1");
            head.header("Set-Cookie", "b=2");
            out.write(ascii("made"));
        }));
        assertEquals(201, r.status());
        assertEquals("text/plain", r.headers().first("content-type"));
        assertEquals(java.util.List.of("a=1", "b=2"), r.headers().all("set-cookie"));
        assertEquals("made", r.bodyText());
        assertEquals("chunked", r.headers().first("transfer-encoding"));
        assertTrue(r.complete());
    }

    @Test
    void aDeclaredContentLengthFramesTheBody() {
        TestResponse r = TestRequest.get("/").call(req -> Response.deferred((head, out) -> {
            head.header("Content-Length", "5");
            out.write(ascii("hello"));
        }));
        assertEquals("5", r.headers().first("content-length"));
        assertNull(r.headers().first("transfer-encoding"));
        assertEquals("hello", r.bodyText());
    }

    @Test
    void theHeadIsFixedAtTheFirstWriteAndChangesAfterItThrow() {
        AtomicReference<Throwable> late = new AtomicReference<>();
        TestResponse r = TestRequest.get("/").call(req -> Response.deferred((head, out) -> {
            head.status(202);
            assertFalse(head.sent());
            out.write('x');
            assertTrue(head.sent());
            late.set(assertThrows(IllegalStateException.class, () -> head.status(500)));
            assertThrows(IllegalStateException.class, () -> head.header("X-Late", "1"));
        }));
        assertEquals(202, r.status());
        assertNull(r.headers().first("x-late"));
        assertEquals("afterburn: the response head was already sent", late.get().getMessage());
    }

    @Test
    void aFlushSendsTheHeadWithoutABody() {
        TestResponse r = TestRequest.get("/").call(req -> Response.deferred((head, out) -> {
            head.status(200);
            out.flush();
            assertTrue(head.sent());
            out.write(ascii("later"));
        }));
        assertEquals(200, r.status());
        assertEquals("later", r.bodyText());
    }

    @Test
    void aWriterThatWritesNothingSendsItsHeadWhenItReturns() {
        TestResponse r = TestRequest.get("/").call(req -> Response.deferred((head, out) -> {
            head.status(204);
            head.header("X-Done", "yes");
        }));
        assertEquals(204, r.status());
        assertEquals("yes", r.headers().first("x-done"));
        assertEquals(0, r.body().length);
        assertTrue(r.complete());
    }

    @Test
    void aFailureBeforeTheHeadIs500HandlerError() {
        TestResponse r = TestRequest.get("/").call(req -> Response.deferred((head, out) -> {
            head.status(201);
            throw new IllegalStateException("boom");
        }));
        assertEquals(500, r.status());
        assertEquals("handler_error", r.headers().first("afterburn-error"));
    }

    @Test
    void aFailureAfterTheHeadLeavesTheResponseIncomplete() {
        TestResponse r = TestRequest.get("/").call(req -> Response.deferred((head, out) -> {
            out.write(ascii("part"));
            out.flush();
            throw new IllegalStateException("boom");
        }));
        assertEquals(200, r.status());
        assertFalse(r.complete());
    }

    @Test
    void trailersSetOnTheHeadAreSent() {
        TestResponse r = TestRequest.get("/").call(req -> Response.deferred((head, out) -> {
            head.trailers(() -> Headers.of("X-Sum", "42"));
            out.write(ascii("body"));
        }));
        assertEquals("42", r.trailers().first("x-sum"));
    }

    @Test
    void anInformationalStatusIsRefused() {
        TestResponse r = TestRequest.get("/").call(req -> Response.deferred((head, out) -> head.status(101)));
        assertEquals(500, r.status(), "§4.4: never 1xx; the writer's exception is a handler error");
    }

    @Test
    void aHeadRequestGetsTheHeadAndNoBody() {
        TestResponse r = TestRequest.of("HEAD", "/").call(req -> Response.deferred((head, out) -> {
            head.header("Content-Length", "3");
            out.write(ascii("abc"));
        }));
        assertEquals(200, r.status());
        assertEquals("3", r.headers().first("content-length"), r.headers().toString());
        assertEquals(0, r.body().length);
        TestResponse plain = TestRequest.of("HEAD", "/").call(req -> Response.ok().body("abc"));
        assertEquals("3", plain.headers().first("content-length"), plain.headers().toString());
    }
}
