package dev.afterburn.runtime;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import org.junit.jupiter.api.Test;

/** The in-process test helper users call instead of a watchdog. */
class TestRequestTest {
    @Test
    void callsTheHandlerWithEverythingTheRequestCarries() {
        TestResponse r = TestRequest.of("PUT", "/items/7?dry=1")
                .header("X-Tag", "a").header("X-Tag", "b")
                .body("payload")
                .requestId("rid-t")
                .timeout(Duration.ofSeconds(5))
                .call(req -> Response.ok().header("X-Seen", String.join(",", req.headers().all("x-tag")))
                        .body(req.method() + " " + req.path() + " " + req.query() + " " + req.bodyText() + " "
                                + req.requestId() + " " + req.hasDeadline()));
        assertEquals(200, r.status());
        assertEquals("a,b", r.headers().first("X-Seen"));
        assertEquals("PUT /items/7 dry=1 payload rid-t true", r.bodyText());
        assertTrue(r.complete());
    }

    @Test
    void streamedResponsesAreDechunked() {
        TestResponse r = TestRequest.get("/").call(req -> Response.ok().stream(out -> {
            for (int i = 0; i < 3; i++) {
                out.write(("line " + i + "\n").getBytes(StandardCharsets.US_ASCII));
                out.flush();
            }
        }));
        assertEquals("chunked", r.headers().first("transfer-encoding"));
        assertEquals("line 0\nline 1\nline 2\n", r.bodyText());
    }

    @Test
    void headResponsesHaveNoBody() {
        TestResponse r = TestRequest.of("HEAD", "/").call(req -> Response.ok().body("twelve bytes"));
        assertEquals(200, r.status());
        assertEquals("12", r.headers().first("content-length"));
        assertEquals(0, r.body().length);
        assertTrue(r.complete());
    }

    @Test
    void aHandlerThatFailsMidStreamGivesAnIncompleteResponse() {
        TestResponse r = TestRequest.get("/").call(req -> Response.ok().stream(out -> {
            out.write("partial".getBytes(StandardCharsets.US_ASCII));
            out.flush();
            throw new IllegalStateException("boom");
        }));
        assertEquals(200, r.status());
        assertEquals("partial", r.bodyText());
        assertFalse(r.complete());
    }
}
