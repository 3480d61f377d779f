package dev.afterburn.shapes;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.google.cloud.functions.CloudEventsFunction;
import dev.afterburn.runtime.Response;
import dev.afterburn.runtime.TestRequest;
import dev.afterburn.runtime.TestResponse;
import io.cloudevents.CloudEvent;
import io.cloudevents.core.builder.CloudEventBuilder;
import io.cloudevents.core.provider.EventFormatProvider;
import java.io.IOException;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.Base64;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/** {@code conformance/shapes/cloudevents.json} against {@link CloudEvents}, on the SDK's CloudEvent. */
class CloudEventsShapeTest {
    static Stream<Arguments> cases() throws IOException {
        return ShapeCases.cases("cloudevents");
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("cases")
    void sharedCase(String id, JsonNode c) throws Exception {
        AtomicReference<CloudEvent> seen = new AtomicReference<>();
        Object result = resultOf(c.get("result"));
        TestResponse r = ShapeCases.call(c, CloudEvents.handler(event -> {
            seen.set(event);
            return result;
        }));
        if (c.has("event")) {
            assertNotNull(seen.get(), id + ": the function was not called; " + r.status() + " " + r.bodyText());
            ShapeCases.assertSubset(c.get("event"), eventJson(seen.get()), id);
        }
        if (c.has("response")) ShapeCases.assertResponse(c, r);
        if (c.has("error")) {
            ShapeCases.assertError(c, r);
            if (c.get("error").asText().equals("bad_request")) assertNull(seen.get(), id + ": the function was called with " + seen.get());
        }
    }

    /**
     * The case's result as a Java function returns it: {@code {"event"}} an SDK CloudEvent (read
     * by the SDK's own JSON format), {@code {"response"}} a {@link Response}, null nothing.
     */
    static Object resultOf(JsonNode result) throws IOException {
        if (result == null || result.isNull()) return null;
        if (result.has("event")) {
            return EventFormatProvider.getInstance().resolveFormat(CloudEventsHttp.STRUCTURED)
                    .deserialize(ShapeCases.JSON.writeValueAsBytes(result.get("event")));
        }
        JsonNode plain = result.get("response");
        Response r = Response.status(plain.get("status").asInt());
        for (JsonNode h : plain.path("headers")) r.header(h.get(0).asText(), h.get(1).asText());
        return r.body(ShapeCases.bodyOf(plain));
    }

    /**
     * The README's view of an event: its attributes and extensions as the JSON format writes
     * them, {@code data} decoded by its content type (JSON parsed, {@code text/*} a string),
     * else {@code data_base64}.
     */
    static JsonNode eventJson(CloudEvent e) throws IOException {
        ObjectNode o = ShapeCases.JSON.createObjectNode();
        for (String name : e.getAttributeNames()) {
            Object v = e.getAttribute(name);
            if (v != null) o.put(name, CloudEventsHttp.canonical(v));
        }
        for (String name : e.getExtensionNames()) {
            Object v = e.getExtension(name);
            if (v != null) o.put(name, CloudEventsHttp.canonical(v));
        }
        if (e.getData() != null) {
            byte[] data = e.getData().toBytes();
            String media = CloudEventsHttp.media(e.getDataContentType());
            if (media.isEmpty() || media.equals("application/json") || media.endsWith("+json")) {
                o.set("data", ShapeCases.JSON.readTree(data));
            } else if (media.startsWith("text/")) {
                o.put("data", new String(data, StandardCharsets.UTF_8));
            } else {
                o.put("data_base64", Base64.getEncoder().encodeToString(data));
            }
        }
        return o;
    }

    @Test
    void aCloudEventsFunctionIsAcknowledgedWith204() {
        AtomicReference<CloudEvent> seen = new AtomicReference<>();
        CloudEventsFunction fn = seen::set;
        TestResponse r = TestRequest.post("/").header("ce-specversion", "1.0").header("ce-id", "g-1")
                .header("ce-source", "//pubsub").header("ce-type", "google.cloud.pubsub.topic.v1.messagePublished")
                .header("Content-Type", "application/json").body("{\"message\":{}}").call(CloudEvents.accepting(fn));
        assertEquals(204, r.status(), r.bodyText());
        assertEquals("g-1", seen.get().getId());
        assertEquals("{\"message\":{}}", new String(seen.get().getData().toBytes(), StandardCharsets.UTF_8));
    }

    @Test
    void aResultOfAnotherTypeIsAHandlerError() throws IOException {
        TestResponse r = TestRequest.post("/").header("ce-specversion", "1.0").header("ce-id", "x").header("ce-source", "s")
                .header("ce-type", "t").requestId("ce-str").call(CloudEvents.handler(event -> "a string"));
        assertEquals(500, r.status());
        assertEquals("handler_error", ShapeCases.JSON.readTree(r.body()).path("type").asText());
    }

    @Test
    void aBadTimeOrSpecVersionIsNoEvent() {
        for (String[] bad : new String[][] {{"ce-time", "yesterday"}, {"ce-specversion", "0.3"}, {"ce-Bad_Name", "x"}}) {
            TestRequest t = TestRequest.post("/");
            if (!bad[0].equals("ce-specversion")) t.header("ce-specversion", "1.0");
            t.header("ce-id", "x").header("ce-source", "s").header("ce-type", "t").header(bad[0], bad[1]);
            TestResponse r = t.call(CloudEvents.handler(event -> null));
            assertEquals(400, r.status(), bad[0] + ": " + r.bodyText());
        }
    }

    @Test
    void aRepliedEventKeepsItsExtensionsAndTime() {
        CloudEvent reply = CloudEventBuilder.v1().withId("r").withSource(URI.create("/fn")).withType("t")
                .withTime(java.time.OffsetDateTime.parse("2026-11-28T10:00:00Z")).withExtension("traceparent", "00-ab-cd-01")
                .withExtension("n", 3).build();
        TestResponse r = TestRequest.post("/").header("ce-specversion", "1.0").header("ce-id", "x").header("ce-source", "s")
                .header("ce-type", "t").call(CloudEvents.handler(event -> reply));
        assertEquals(200, r.status(), r.bodyText());
        assertEquals("2026-11-28T10:00:00Z", r.headers().first("ce-time"));
        assertEquals("00-ab-cd-01", r.headers().first("ce-traceparent"));
        assertEquals("3", r.headers().first("ce-n"));
        assertEquals("", r.bodyText());
    }
}
