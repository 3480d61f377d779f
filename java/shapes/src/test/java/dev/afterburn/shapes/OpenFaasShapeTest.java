package dev.afterburn.shapes;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.openfaas.model.IResponse;
import com.openfaas.model.Response;
import dev.afterburn.runtime.TestRequest;
import dev.afterburn.runtime.TestResponse;
import java.io.IOException;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Predicate;
import java.util.stream.Stream;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.jupiter.params.provider.ValueSource;

/** {@code conformance/shapes/openfaas-http.json} against {@link OpenFaas}, and the java11 model's own API. */
class OpenFaasShapeTest {
    /**
     * Cases whose result no java11 handler can return, with the test that says why:
     * {@code IResponse.getBody()} is a String and {@code getStatusCode()} an int. A listed case
     * that stops being one of these fails, so the list cannot go stale.
     */
    private static final Map<String, Predicate<JsonNode>> NOT_A_JAVA11_RESULT = Map.of(
            "openfaas-http/object-body-json", result -> result.path("body").isContainerNode(),
            "openfaas-http/malformed-status", result -> !result.path("statusCode").isInt());

    static Stream<Arguments> cases() throws IOException {
        return ShapeCases.cases("openfaas-http");
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("cases")
    void sharedCase(String id, JsonNode c) throws Exception {
        Predicate<JsonNode> inexpressible = NOT_A_JAVA11_RESULT.get(id);
        if (inexpressible != null) {
            assertTrue(inexpressible.test(c.get("result")), id + " is listed as a result java11's IResponse cannot hold, but it can: "
                    + c.get("result") + "; take it off the list");
            Assumptions.abort(id + ": java11's IResponse cannot hold the result " + c.get("result"));
        }
        AtomicReference<OpenFaasRequest> seen = new AtomicReference<>();
        JsonNode result = c.get("result");
        TestResponse r = ShapeCases.call(c, OpenFaas.handler(new com.openfaas.model.AbstractHandler() {
            @Override
            public IResponse Handle(com.openfaas.model.IRequest req) {
                seen.set((OpenFaasRequest) req);
                return result == null ? new Response() : toIResponse(result);
            }
        }));
        if (c.has("event")) ShapeCases.assertSubset(c.get("event"), seenOf(seen.get()), id);
        if (c.has("response")) ShapeCases.assertResponse(c, r);
        if (c.has("error")) ShapeCases.assertError(c, r);
    }

    /** The case's result as a java11 handler returns it: com.openfaas.model.Response; JSON null as a null IResponse. */
    static IResponse toIResponse(JsonNode result) {
        if (result.isNull()) return null;
        Response res = new Response();
        if (result.has("statusCode")) res.setStatusCode(result.get("statusCode").asInt());
        for (Map.Entry<String, JsonNode> h : result.path("headers").properties()) res.setHeader(h.getKey(), h.getValue().asText());
        if (result.has("body")) res.setBody(result.get("body").asText());
        return res;
    }

    /** The README's {@code seen} of a java11 request. */
    static JsonNode seenOf(OpenFaasRequest req) {
        ObjectNode s = ShapeCases.JSON.createObjectNode();
        s.put("method", req.getMethod());
        s.put("path", req.getPathRaw());
        s.set("query", ShapeCases.JSON.valueToTree(req.getQueryValues()));
        s.set("headers", ShapeCases.JSON.valueToTree(req.getHeaderValues()));
        s.put("body", req.getBody());
        s.put("body_b64", Base64.getEncoder().encodeToString(req.getBodyBytes()));
        return s;
    }

    private static OpenFaasRequest requestOf(TestRequest t) {
        AtomicReference<OpenFaasRequest> seen = new AtomicReference<>();
        TestResponse r = t.call(OpenFaas.handler(req -> {
            seen.set((OpenFaasRequest) req);
            return new Response();
        }));
        assertEquals(200, r.status(), r.bodyText());
        return seen.get();
    }

    @Test
    void theModelsSingleValuedViewIsTheEntrypoints() {
        OpenFaasRequest req = requestOf(TestRequest.get("/users/7/orders/x%20y?tag=a&tag=b&q=x+y&flag")
                .header("X-Multi", "1").header("x-multi", "2").header("Content-Type", "text/plain"));
        // com.sun.net.httpserver's spelling and first value; lookups in any case.
        assertEquals("1", req.getHeaders().get("X-multi"));
        assertTrue(req.getHeaders().containsKey("Content-type"), req.getHeaders().toString());
        assertEquals("text/plain", req.getHeader("Content-Type"));
        assertEquals("text/plain", req.getHeader("content-type"));
        assertNull(req.getHeader("x-absent"));
        assertEquals(List.of("1", "2"), req.getHeaderValues().get("x-multi"));
        // The query: raw as sent, decoded with each name's last value.
        assertEquals("tag=a&tag=b&q=x+y&flag", req.getQueryRaw());
        assertEquals(Map.of("tag", "b", "q", "x y", "flag", ""), req.getQuery());
        // The path decoded as URI.getPath(), and its segments in pairs.
        assertEquals("/users/7/orders/x y", req.getPathRaw());
        assertEquals(Map.of("users", "7", "orders", "x y"), req.getPath());
        assertEquals("", req.getBody());

        OpenFaasRequest bare = requestOf(TestRequest.get("/a"));
        assertNull(bare.getQueryRaw(), "no '?': URI.getRawQuery() is null");
        assertEquals(Map.of("a", ""), bare.getPath());
        assertEquals(Map.of(), bare.getQuery());
    }

    @Test
    void contentTypeAndHeadersAsTheEntrypointWroteThem() {
        Response res = new Response();
        res.setContentType("application/json");
        res.setBody("{}");
        TestResponse r = TestRequest.get("/").call(OpenFaas.handler(req -> res));
        assertEquals("application/json", r.headers().first("Content-Type"));
        assertEquals("{}", r.bodyText());

        Response both = new Response();
        both.setContentType("text/plain");
        both.setHeader("content-type", "text/html");
        TestResponse r2 = TestRequest.get("/").call(OpenFaas.handler(req -> both));
        assertEquals(List.of("text/html"), r2.headers().all("Content-Type"), "getHeaders() wins over getContentType()");

        Response nullBody = new Response();
        nullBody.setBody(null);
        assertEquals("", TestRequest.get("/").call(OpenFaas.handler(req -> nullBody)).bodyText());
        assertEquals(200, TestRequest.get("/").call(OpenFaas.handler(req -> null)).status());
    }

    @ParameterizedTest(name = "statusCode {0}")
    @ValueSource(ints = {0, -1, 99, 100, 101, 199, 600, 1000})
    void aStatusCodeThatIsNoFinalStatusIsAHandlerError(int status) throws IOException {
        Response res = new Response();
        res.setStatusCode(status);
        TestResponse r = TestRequest.get("/").requestId("of-status").call(OpenFaas.handler(req -> res));
        assertEquals(500, r.status(), r.bodyText());
        assertEquals("handler_error", ShapeCases.JSON.readTree(r.body()).path("type").asText());
    }
}
