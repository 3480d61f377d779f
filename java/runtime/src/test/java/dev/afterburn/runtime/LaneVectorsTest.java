package dev.afterburn.runtime;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The shared vectors of conformance/vectors, served on lane 2 of a worker with two lanes
 * (PROTOCOL.md §2.5: each lane is an AfterBurn/1 stream exactly as §3 to §9 describe): every
 * {@code parse} vector through the serve loop with the fixture's echo, and every
 * {@code exchange/} vector with the routes it uses, on real pipes, the response read off lane
 * 2's pipe as the watchdog would. Lane 1 stays idle and is checked to still serve at the end.
 */
@Timeout(value = 60, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
class LaneVectorsTest {
    private static final ObjectMapper JSON = new ObjectMapper();

    @TempDir
    Path tmp;

    static Stream<Vectors.Vector> parseVectors() throws IOException {
        return Vectors.ofKind("parse").stream();
    }

    static Stream<Vectors.Vector> exchangeVectors() throws IOException {
        return ExchangeVectorsTest.exchangeVectors();
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("parseVectors")
    void parseVectorOnLane2(Vectors.Vector v) throws Exception {
        run(v, r -> echo(r));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("exchangeVectors")
    void exchangeVectorOnLane2(Vectors.Vector v) throws Throwable {
        int[] requests = {0};
        Vectors.run(v, () -> run(v, r -> ExchangeVectorsTest.route(v, r, ++requests[0])));
    }

    private void run(Vectors.Vector v, Handler handler) throws Exception {
        Path dir = Files.createTempDirectory(tmp, "v");
        try (LaneRig rig = new LaneRig(dir, 2, handler, v.limits())) {
            // The watchdog's side writes while it reads (§6.2): a writer thread of its own.
            Thread writer = new Thread(() -> {
                try {
                    for (byte[] s : v.segments()) rig.send(2, s);
                    if (v.closeRequestPipe()) rig.endLane(2);
                } catch (IOException e) {
                    // the lane closed after a rejection (§8.8): the rest is never read
                }
            }, "vector-writer");
            writer.setDaemon(true);
            writer.start();
            int i = 0;
            boolean rejected = false;
            for (JsonNode e : v.expect()) {
                String where = v.id() + " response " + i++ + " on lane 2";
                if (e.has("response")) {
                    JsonNode want = e.get("response");
                    ExchangeVectorsTest.Parsed got = rig.responses(2).next(want.path("no_body").asBoolean(false));
                    if (got == null) fail(where + ": EOF; log: " + rig.log());
                    ExchangeVectorsTest.check(where, want, got);
                } else if (e.has("reject")) {
                    ExchangeVectorsTest.Parsed got = rig.response(2);
                    JsonNode r = e.get("reject");
                    assertEquals(r.get("status").asInt(), got.status(), where + ": status; log: " + rig.log());
                    assertEquals(r.get("type").asText(), ResponseReader.first(got.headers(), "afterburn-error"), where + ": type");
                    assertTrue(rig.responses(2).atEof(), where + ": §8.8: the lane is closed after a rejection");
                    rejected = true;
                } else if (e.has("echo")) {
                    ExchangeVectorsTest.Parsed got = rig.response(2);
                    assertEquals(200, got.status(), where + ": " + new String(got.body(), java.nio.charset.StandardCharsets.UTF_8));
                    checkEcho(where, e, JSON.readTree(got.body()));
                } else {
                    fail(where + ": this test does not run " + e);
                }
            }
            // Lane 1 is untouched by whatever happened on lane 2.
            rig.send(1, LanesTest.get("/echo-lane-1"));
            ExchangeVectorsTest.Parsed one = rig.response(1);
            assertEquals(200, one.status(), v.id() + ": lane 1 still serves");
            Worker.Outcome outcome = rig.finish();
            if (!rejected) {
                assertTrue(rig.responses(2).atEof(), v.id() + ": nothing after the last response on lane 2");
                assertEquals(Worker.Outcome.CLOSED, outcome, v.id() + ": log: " + rig.log());
            } else {
                assertEquals(Worker.Outcome.FAILED, outcome, v.id());
            }
        }
    }

    /** The fixture's echo (conformance/README.md). */
    private static Response echo(Request r) throws IOException {
        byte[] body = r.bodyBytes();
        ObjectNode o = JSON.createObjectNode();
        o.put("method", r.method()).put("path", r.path()).put("query", r.query());
        o.set("headers", pairs(r.headers()));
        o.set("trailers", pairs(r.trailers()));
        o.put("body_b64", Base64.getEncoder().encodeToString(body)).put("body_len", body.length);
        o.put("request_id", r.requestId());
        return Response.ok().header("Content-Type", "application/json").body(JSON.writeValueAsBytes(o));
    }

    private static ArrayNode pairs(Headers h) {
        ArrayNode a = JSON.createArrayNode();
        for (Headers.Field f : h) a.addArray().add(f.name().toLowerCase(Locale.ROOT)).add(f.value());
        return a;
    }

    private static void checkEcho(String where, JsonNode expectation, JsonNode got) {
        JsonNode want = expectation.get("echo");
        for (Map.Entry<String, JsonNode> f : want.properties()) {
            String k = f.getKey();
            if (k.equals("headers") || k.equals("trailers")) {
                checkFields(where + ": " + k, f.getValue(), got.get(k));
            } else if (k.equals("body_len")) {
                assertEquals(f.getValue().asLong(), got.get(k).asLong(), where + ": " + k);
            } else {
                assertEquals(f.getValue().asText(), got.path(k).asText(), where + ": " + k);
            }
        }
        if (expectation.has("absent_headers")) {
            for (JsonNode name : expectation.get("absent_headers")) {
                for (JsonNode h : got.get("headers")) {
                    assertFalse(h.get(0).asText().equals(name.asText()), where + ": header " + name + " must be absent");
                }
            }
        }
    }

    /** Per-name matching of the conformance README's "Field lists". */
    private static void checkFields(String where, JsonNode want, JsonNode got) {
        if (want.isEmpty()) {
            assertTrue(got.isEmpty(), where + ": want none, got " + got);
            return;
        }
        for (JsonNode pair : want) {
            String name = pair.get(0).asText();
            List<String> wantValues = new ArrayList<>();
            for (JsonNode p : want) if (p.get(0).asText().equals(name)) wantValues.add(p.get(1).asText());
            List<String> gotValues = new ArrayList<>();
            for (JsonNode g : got) if (g.get(0).asText().equals(name)) gotValues.add(g.get(1).asText());
            assertEquals(wantValues, gotValues, where + ": values of " + name + " in " + got);
        }
    }
}
