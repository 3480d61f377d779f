package dev.afterburn.shapes;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.afterburn.shapes.fixtures.HttpApiFunction;
import dev.afterburn.shapes.fixtures.OpenFaasEcho;
import dev.afterburn.shapes.fixtures.ReplyFunction;
import dev.afterburn.shapes.fixtures.StreamFunction;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Each shape's launcher under the real watchdog, serving a function written for its platform
 * with nothing of AfterBurn in it; a malformed result or event is answered with the §8.1 body
 * and the worker serves on (never replaced, exit 0 on SIGTERM: {@link ServedFunction#close}).
 */
class ShapesWatchdogTest {
    private static String text(HttpResponse<byte[]> r) {
        return new String(r.body(), StandardCharsets.UTF_8);
    }

    private static void assertError(ServedFunction f, HttpResponse<byte[]> r, int status, String type) throws Exception {
        assertEquals(status, r.statusCode(), text(r) + "\n" + f.log());
        JsonNode body = ShapeCases.JSON.readTree(r.body());
        assertEquals(type, body.path("type").asText(), text(r));
        assertEquals(r.headers().firstValue("AfterBurn-Request-Id").orElse("?"), body.path("request_id").asText(), text(r));
    }

    /**
     * OpenFaaS's java11 template's own default handler, byte for byte
     * (openfaas/templates, template/java11/function/src/main/java/com/openfaas/function/Handler.java,
     * MIT licence), started as the template's entrypoint starts it: by its class name.
     */
    @Test
    void openFaasJava11DefaultHandler() throws Exception {
        try (ServedFunction f = new ServedFunction(OpenFaas.class, OpenFaas.DEFAULT_HANDLER)) {
            for (String method : List.of("GET", "POST", "PUT", "DELETE")) {
                HttpResponse<byte[]> r = f.send(f.request("/any/path?x=1").method(method, HttpRequest.BodyPublishers.ofString("body")));
                assertEquals(200, r.statusCode(), method + ": " + text(r) + "\n" + f.log());
                assertEquals("Hello, world!", text(r), method);
            }
        }
    }

    @Test
    void openFaasHandlerWithAMalformedStatus() throws Exception {
        try (ServedFunction f = new ServedFunction(OpenFaas.class, OpenFaasEcho.class.getName())) {
            HttpResponse<byte[]> r = f.send(f.request("/echo?name=Ada").header("X-From", "the test")
                    .POST(HttpRequest.BodyPublishers.ofString("héllo")));
            assertEquals(201, r.statusCode(), text(r) + "\n" + f.log());
            assertEquals("héllo from the test", text(r));
            assertEquals("Ada", r.headers().firstValue("X-Name").orElse(null));
            assertEquals("text/plain", r.headers().firstValue("Content-Type").orElse(null));
            assertError(f, f.send(f.request("/bad")), 500, "handler_error");
            f.awaitLog("statusCode 1000 is not an HTTP status"); // logged with its stack (§8.3)
            assertEquals(201, f.send(f.request("/again").POST(HttpRequest.BodyPublishers.ofString("x"))).statusCode(), f.log());
        }
    }

    @Test
    void lambdaHttpApiFunction() throws Exception {
        try (ServedFunction f = new ServedFunction(Lambda.class, HttpApiFunction.class.getName())) {
            HttpResponse<byte[]> r = f.send(f.request("/hello?a=1").header("Cookie", "c1=v1; c2=v2")
                    .header("Content-Type", "text/plain").POST(HttpRequest.BodyPublishers.ofString("payload")));
            assertEquals(200, r.statusCode(), text(r) + "\n" + f.log());
            assertEquals("text/html", r.headers().firstValue("Content-Type").orElse(null));
            assertEquals(List.of("c1=v1", "c2=v2"), r.headers().allValues("Set-Cookie"));
            String id = r.headers().firstValue("AfterBurn-Request-Id").orElseThrow();
            assertEquals("<h1>POST /hello</h1><p>payload</p><p>" + id + "</p>", text(r));
            f.awaitLog("handling POST /hello"); // context.getLogger() reached the log
            assertError(f, f.send(f.request("/bad")), 500, "handler_error");
            assertTrue(text(f.send(f.request("/again"))).contains("Empty body"), f.log());
        }
    }

    @Test
    void lambdaStreamFunction() throws Exception {
        try (ServedFunction f = new ServedFunction(Lambda.class, StreamFunction.class.getName())) {
            byte[] bytes = {0, 1, 2, (byte) 0xff, 'x'};
            HttpResponse<byte[]> r = f.send(f.request("/bin").header("Content-Type", "application/octet-stream")
                    .header("X-Request-Id", "stream-1").POST(HttpRequest.BodyPublishers.ofByteArray(bytes)));
            assertEquals(200, r.statusCode(), text(r) + "\n" + f.log());
            assertArrayEquals(bytes, r.body(), "base64 in, base64 out, the same bytes");
            assertEquals("stream-1", r.headers().firstValue("x-request-id").orElse(null));
            int left = Integer.parseInt(r.headers().firstValue("x-remaining-ms").orElse("-1"));
            assertTrue(left > 0 && left <= 10_000, "getRemainingTimeInMillis() " + left + " within the 10 s exec_timeout");
        }
    }

    @Test
    void cloudEventsReplyFunction() throws Exception {
        try (ServedFunction f = new ServedFunction(CloudEvents.class, ReplyFunction.class.getName())) {
            HttpResponse<byte[]> r = f.send(f.request("/").header("ce-specversion", "1.0").header("ce-id", "e-1")
                    .header("ce-source", "/orders").header("ce-type", "order.created").header("ce-subject", "o 42")
                    .header("Content-Type", "application/json").POST(HttpRequest.BodyPublishers.ofString("{\"qty\":2}")));
            assertEquals(200, r.statusCode(), text(r) + "\n" + f.log());
            assertEquals("reply-to-e-1", r.headers().firstValue("ce-id").orElse(null));
            assertEquals("order.created.handled", r.headers().firstValue("ce-type").orElse(null));
            assertEquals("o%2042", r.headers().firstValue("ce-subject").orElse(null));
            assertEquals("application/json", r.headers().firstValue("Content-Type").orElse(null));
            assertEquals("{\"qty\":2}", text(r));
            HttpResponse<byte[]> structured = f.send(f.request("/").header("Content-Type", "application/cloudevents+json")
                    .POST(HttpRequest.BodyPublishers.ofString("{\"specversion\":\"1.0\",\"id\":\"e-2\",\"source\":\"/s\",\"type\":\"t\"}")));
            assertEquals(200, structured.statusCode(), text(structured) + "\n" + f.log());
            assertEquals("reply-to-e-2", structured.headers().firstValue("ce-id").orElse(null));
            assertError(f, f.send(f.request("/").header("ce-specversion", "1.0").header("ce-source", "s").header("ce-type", "t")
                    .POST(HttpRequest.BodyPublishers.ofString(""))), 400, "bad_request");
            f.awaitLog("is not a CloudEvent");
        }
    }
}
