package dev.afterburn.shapes;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.amazonaws.services.lambda.runtime.Context;
import com.amazonaws.services.lambda.runtime.RequestHandler;
import com.amazonaws.services.lambda.runtime.RequestStreamHandler;
import com.amazonaws.services.lambda.runtime.events.APIGatewayV2HTTPEvent;
import com.amazonaws.services.lambda.runtime.events.APIGatewayV2HTTPResponse;
import com.fasterxml.jackson.databind.JsonNode;
import dev.afterburn.runtime.TestRequest;
import dev.afterburn.runtime.TestResponse;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * {@code conformance/shapes/lambda-http.json} against {@link Lambda}, three ways: a
 * {@link RequestStreamHandler} (the event's and the result's JSON exactly as they cross), a
 * {@code RequestHandler<Map, Object>}, and the typed
 * {@code RequestHandler<APIGatewayV2HTTPEvent, APIGatewayV2HTTPResponse>}.
 */
class LambdaShapeTest {
    static Stream<Arguments> cases() throws IOException {
        return ShapeCases.cases("lambda-http");
    }

    /** What a handler saw: the event as JSON and its context's two values. */
    private static final class Seen {
        final AtomicReference<JsonNode> event = new AtomicReference<>();
        final AtomicReference<String> requestId = new AtomicReference<>();
        final AtomicInteger remaining = new AtomicInteger(-1);

        void context(Context ctx) {
            requestId.set(ctx.getAwsRequestId());
            remaining.set(ctx.getRemainingTimeInMillis());
        }
    }

    private static JsonNode resultOf(JsonNode c) {
        return c.has("result") ? c.get("result") : ShapeCases.JSON.createObjectNode().put("statusCode", 200);
    }

    private static void check(JsonNode c, Seen seen, TestResponse r, boolean resultChecked) throws IOException {
        String id = c.get("id").asText();
        if (c.has("event")) {
            assertNotNull(seen.event.get(), id + ": the handler was not called; " + r.status() + " " + r.bodyText());
            ShapeCases.assertSubset(c.get("event"), seen.event.get(), id);
        }
        if (c.has("context")) {
            JsonNode want = c.get("context");
            assertEquals(want.get("awsRequestId").asText(), seen.requestId.get(), id + ": getAwsRequestId()");
            int left = seen.remaining.get();
            assertTrue(left >= want.get("remaining_min_ms").asInt() && left <= want.get("remaining_max_ms").asInt(),
                    id + ": getRemainingTimeInMillis() " + left + "; want " + want.get("remaining_min_ms") + " to " + want.get("remaining_max_ms"));
        }
        if (resultChecked && c.has("response")) ShapeCases.assertResponse(c, r);
        if (resultChecked && c.has("error")) ShapeCases.assertError(c, r);
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("cases")
    void requestStreamHandler(String id, JsonNode c) throws Exception {
        Seen seen = new Seen();
        byte[] result = ShapeCases.JSON.writeValueAsBytes(resultOf(c));
        TestResponse r = ShapeCases.call(c, Lambda.handler((RequestStreamHandler) (in, out, ctx) -> {
            seen.event.set(ShapeCases.JSON.readTree(in));
            seen.context(ctx);
            out.write(result);
        }));
        check(c, seen, r, true);
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("cases")
    void requestHandlerOfMaps(String id, JsonNode c) throws Exception {
        Seen seen = new Seen();
        Object result = ShapeCases.JSON.treeToValue(resultOf(c), Object.class);
        RequestHandler<Map<String, Object>, Object> fn = new RequestHandler<>() {
            @Override
            public Object handleRequest(Map<String, Object> event, Context ctx) {
                seen.event.set(ShapeCases.JSON.valueToTree(event));
                seen.context(ctx);
                return result;
            }
        };
        check(c, seen, ShapeCases.call(c, Lambda.handler(fn)), true);
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("cases")
    void requestHandlerOfApiGatewayV2Types(String id, JsonNode c) throws Exception {
        Seen seen = new Seen();
        JsonNode result = resultOf(c);
        // APIGatewayV2HTTPResponse holds a well-formed statusCode result only (an int status, a string body).
        boolean typed = result.isObject() && result.path("statusCode").isInt();
        APIGatewayV2HTTPResponse response = typed ? LambdaJson.MAPPER.treeToValue(result, APIGatewayV2HTTPResponse.class) : null;
        TestResponse r = ShapeCases.call(c, Lambda.handler(new HttpApiFunction(seen, response)));
        check(c, seen, r, typed);
    }

    /** A typed handler as a Lambda function writes one; its class names its types. */
    private static final class HttpApiFunction implements RequestHandler<APIGatewayV2HTTPEvent, APIGatewayV2HTTPResponse> {
        private final Seen seen;
        private final APIGatewayV2HTTPResponse response;

        HttpApiFunction(Seen seen, APIGatewayV2HTTPResponse response) {
            this.seen = seen;
            this.response = response;
        }

        @Override
        public APIGatewayV2HTTPResponse handleRequest(APIGatewayV2HTTPEvent event, Context ctx) {
            seen.event.set(LambdaJson.MAPPER.valueToTree(event)); // the POJO's fields, back as JSON
            seen.context(ctx);
            return response == null ? APIGatewayV2HTTPResponse.builder().withStatusCode(200).build() : response;
        }
    }

    @Test
    void theTypedEventHasItsFields() {
        AtomicReference<APIGatewayV2HTTPEvent> got = new AtomicReference<>();
        RequestHandler<APIGatewayV2HTTPEvent, APIGatewayV2HTTPResponse> fn = new RequestHandler<>() {
            @Override
            public APIGatewayV2HTTPResponse handleRequest(APIGatewayV2HTTPEvent event, Context ctx) {
                got.set(event);
                return APIGatewayV2HTTPResponse.builder().withStatusCode(201).withBody("ok")
                        .withHeaders(Map.of("X-A", "1")).withCookies(List.of("a=1")).build();
            }
        };
        TestResponse r = TestRequest.post("/p/q?x=1").header("Cookie", "k=v").header("Content-Type", "text/plain")
                .body("hi").requestId("typed-1").call(Lambda.handler(fn));
        assertEquals(201, r.status(), r.bodyText());
        assertEquals("ok", r.bodyText());
        assertEquals("1", r.headers().first("X-A"));
        assertEquals(List.of("a=1"), r.headers().all("Set-Cookie"));
        APIGatewayV2HTTPEvent e = got.get();
        assertEquals("/p/q", e.getRawPath());
        assertEquals("x=1", e.getRawQueryString());
        assertEquals(Map.of("x", "1"), e.getQueryStringParameters());
        assertEquals(List.of("k=v"), e.getCookies());
        assertEquals("hi", e.getBody());
        assertEquals(false, e.getIsBase64Encoded());
        assertEquals("POST", e.getRequestContext().getHttp().getMethod());
        assertEquals("typed-1", e.getRequestContext().getRequestId());
        assertTrue(e.getRequestContext().getTimeEpoch() > 0);
    }

    @Test
    void aStreamThatWritesNoJsonIsAHandlerError() throws IOException {
        TestResponse r = TestRequest.get("/").requestId("not-json")
                .call(Lambda.handler((RequestStreamHandler) (in, out, ctx) -> out.write("<html>".getBytes(StandardCharsets.UTF_8))));
        assertEquals(500, r.status());
        assertEquals("handler_error", ShapeCases.JSON.readTree(r.body()).path("type").asText());
    }

    @Test
    void withoutADeadlineTheContextSaysLambdasLongestTimeout() {
        AtomicInteger left = new AtomicInteger();
        TestRequest.get("/").call(Lambda.handler((RequestStreamHandler) (in, out, ctx) -> {
            left.set(ctx.getRemainingTimeInMillis());
            ctx.getLogger().log("logged through the request's log\n");
        }));
        assertEquals(900_000, left.get());
    }
}
