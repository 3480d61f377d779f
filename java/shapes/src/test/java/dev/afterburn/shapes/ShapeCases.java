package dev.afterburn.shapes;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.afterburn.runtime.Handler;
import dev.afterburn.runtime.TestRequest;
import dev.afterburn.runtime.TestResponse;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.params.provider.Arguments;

/**
 * The shared handler-shape cases, {@code conformance/shapes/*.json}, read in place (the
 * folder's README says how a case reads): the request a case gives, made with the runtime's
 * {@link TestRequest}; the subset match of an expected event ({@code "$any"},
 * {@code "$absent"}); the check of a response or of an error.
 */
final class ShapeCases {
    private ShapeCases() {}

    static final ObjectMapper JSON = new ObjectMapper();

    static Path folder() {
        return Path.of(System.getProperty("afterburn.shapes", "../../conformance/shapes"));
    }

    /** Every case of {@code NAME.json}, as (id, case) arguments. */
    static Stream<Arguments> cases(String name) throws IOException {
        JsonNode file = JSON.readTree(folder().resolve(name + ".json").toFile());
        List<Arguments> out = new ArrayList<>();
        for (JsonNode c : file.get("cases")) out.add(Arguments.of(c.get("id").asText(), c));
        if (out.isEmpty()) fail(name + ".json has no cases");
        return out.stream();
    }

    /** The case's request through the library, to {@code handler}. */
    static TestResponse call(JsonNode c, Handler handler) {
        JsonNode req = c.get("request");
        TestRequest t = TestRequest.of(req.get("method").asText(), req.get("target").asText());
        for (JsonNode h : req.path("headers")) t.header(h.get(0).asText(), h.get(1).asText());
        t.body(bodyOf(req));
        if (req.has("request_id")) t.requestId(req.get("request_id").asText());
        if (req.has("timeout_ms")) t.timeout(Duration.ofMillis(req.get("timeout_ms").asLong()));
        return t.call(handler);
    }

    static byte[] bodyOf(JsonNode m) {
        if (m.has("body_b64")) return Base64.getDecoder().decode(m.get("body_b64").asText());
        return m.path("body").asText("").getBytes(StandardCharsets.UTF_8);
    }

    /**
     * Null when {@code actual} holds {@code expected} (every key named there, with an equal
     * value, objects compared the same way; arrays exactly; {@code "$any"} any present value;
     * {@code "$absent"} a missing or null key), else where and how they differ.
     */
    static String subset(JsonNode expected, JsonNode actual, String at) {
        if (expected.isTextual() && expected.textValue().equals("$any")) {
            return actual == null || actual.isMissingNode() || actual.isNull() ? at + ": missing, want any value" : null;
        }
        if (actual == null || actual.isMissingNode()) return at + ": missing, want " + expected;
        if (expected.isObject()) {
            if (!actual.isObject()) return at + ": got " + actual + ", want an object " + expected;
            for (Map.Entry<String, JsonNode> e : expected.properties()) {
                JsonNode want = e.getValue();
                JsonNode got = actual.get(e.getKey());
                if (want.isTextual() && want.textValue().equals("$absent")) {
                    if (got != null && !got.isNull()) return at + "." + e.getKey() + ": got " + got + ", want it absent";
                    continue;
                }
                String d = subset(want, got, at + "." + e.getKey());
                if (d != null) return d;
            }
            return null;
        }
        if (expected.isNumber() && actual.isNumber()) {
            return expected.decimalValue().compareTo(actual.decimalValue()) == 0 ? null : at + ": got " + actual + ", want " + expected;
        }
        return expected.equals(actual) ? null : at + ": got " + actual + ", want " + expected;
    }

    static void assertSubset(JsonNode expected, JsonNode actual, String id) {
        String d = subset(expected, actual, "event");
        if (d != null) fail(id + ": " + d + "\nwhole event: " + actual);
    }

    /** The case's {@code response}: status, headers as a subset (names case-insensitive, repeats in order), body exact. */
    static void assertResponse(JsonNode c, TestResponse r) {
        String id = c.get("id").asText();
        JsonNode want = c.get("response");
        String got = r.status() + " " + r.headers() + " " + r.bodyText();
        assertEquals(want.get("status").asInt(), r.status(), id + ": status; got " + got);
        List<String> seen = new ArrayList<>();
        for (JsonNode h : want.path("headers")) {
            String name = h.get(0).asText();
            List<String> values = r.headers().all(name);
            int nth = (int) seen.stream().filter(name::equalsIgnoreCase).count();
            seen.add(name);
            assertTrue(values.size() > nth, id + ": no " + (nth + 1) + ". field " + name + "; got " + got);
            assertEquals(h.get(1).asText(), values.get(nth), id + ": field " + name + "; got " + got);
        }
        assertEquals(Base64.getEncoder().encodeToString(bodyOf(want)), Base64.getEncoder().encodeToString(r.body()),
                id + ": body (base64); got " + got);
        assertTrue(r.complete(), id + ": the response is incomplete");
    }

    /** The case's {@code error}: the §8.1 error body of its type, with the status of §8.2. */
    static void assertError(JsonNode c, TestResponse r) throws IOException {
        String id = c.get("id").asText();
        String type = c.get("error").asText();
        int status = type.equals("bad_request") ? 400 : type.equals("handler_error") ? 500 : -1;
        String got = r.status() + " " + r.headers() + " " + r.bodyText();
        assertEquals(status, r.status(), id + ": status; got " + got);
        assertEquals("application/json", r.headers().first("Content-Type"), id + ": " + got);
        assertEquals(type, r.headers().first("AfterBurn-Error"), id + ": " + got);
        JsonNode body = JSON.readTree(r.body());
        assertEquals(type, body.path("type").asText(), id + ": " + got);
        assertEquals(c.get("request").get("request_id").asText(), body.path("request_id").asText(), id + ": " + got);
        assertTrue(r.complete(), id + ": the response is incomplete");
    }
}
