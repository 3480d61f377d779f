package com.openfaas.function;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.afterburn.runtime.TestRequest;
import dev.afterburn.runtime.TestResponse;
import org.junit.jupiter.api.Test;

/**
 * Runs during the image build (mvn package): a failure stops the build. TestRequest sends
 * the request through the same parser and response encoder a worker uses, without a watchdog.
 */
class HandlerTest {
    private final Handler handler = new Handler();

    @Test
    void getGreetsByName() {
        TestResponse r = TestRequest.get("/?name=Ada").call(handler);
        assertEquals(200, r.status());
        assertEquals("Hello, Ada!\n", r.bodyText());
        assertEquals("text/plain; charset=utf-8", r.headers().first("content-type"));
    }

    @Test
    void getWithoutName() {
        assertEquals("Hello, world!\n", TestRequest.get("/").call(handler).bodyText());
    }

    @Test
    void postEchoesTheBody() {
        TestResponse r = TestRequest.post("/")
                .header("Content-Type", "application/json")
                .body("{\"n\":1}")
                .call(handler);
        assertEquals(200, r.status());
        assertEquals("{\"n\":1}", r.bodyText());
        assertEquals("application/json", r.headers().first("content-type"));
    }
}
