package dev.afterburn.runtime;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Iterator;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Every {@code parse} vector of conformance/vectors through the core (RequestDecoder), with
 * no handler: all segments in one read, and one segment per read (incremental parsing).
 */
class VectorsTest {

    static Stream<Vectors.Vector> parseVectors() throws IOException {
        return Vectors.ofKind("parse").stream();
    }

    @Test
    void theVectorsAreThere() throws IOException {
        assertTrue(Vectors.ofKind("parse").size() >= 100, "parse vectors found in " + Vectors.directory());
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("parseVectors")
    void allSegmentsAtOnce(Vectors.Vector v) {
        ByteArrayOutputStream all = new ByteArrayOutputStream();
        for (byte[] s : v.segments()) all.writeBytes(s);
        check(v, run(v, List.of(all.toByteArray())));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("parseVectors")
    void oneSegmentPerRead(Vectors.Vector v) {
        check(v, run(v, v.segments()));
    }

    /** What the core made of one request: an echo in the fixture's format, or a rejection. */
    record Outcome(String method, String path, String query, List<String[]> headers, List<String[]> trailers,
                   byte[] body, String requestId, ProtocolError error) {}

    private static List<Object> run(Vectors.Vector v, List<byte[]> reads) {
        RequestDecoder core = new RequestDecoder(v.limits());
        for (byte[] r : reads) core.feed(r, 0, r.length);
        if (v.closeRequestPipe()) core.endOfInput();
        List<Object> events = new ArrayList<>();
        RequestEvent ev;
        while ((ev = core.poll()) != null) events.add(ev);
        return events;
    }

    private static List<Outcome> outcomes(List<Object> events) {
        List<Outcome> out = new ArrayList<>();
        RequestEvent.Head head = null;
        ByteArrayOutputStream body = new ByteArrayOutputStream();
        for (Object o : events) {
            if (o instanceof RequestEvent.Head) {
                head = (RequestEvent.Head) o;
                body.reset();
            } else if (o instanceof RequestEvent.Content) {
                body.writeBytes(((RequestEvent.Content) o).bytes());
            } else if (o instanceof RequestEvent.End) {
                String target = head.target();
                int q = target.indexOf('?');
                out.add(new Outcome(head.method(), q < 0 ? target : target.substring(0, q), q < 0 ? "" : target.substring(q + 1),
                        pairs(head.headers()), pairs(((RequestEvent.End) o).trailers()), body.toByteArray(),
                        head.requestId(), null));
                head = null;
            } else if (o instanceof RequestEvent.Failure) {
                out.add(new Outcome(null, null, null, null, null, null, null, ((RequestEvent.Failure) o).error()));
            }
        }
        return out;
    }

    private static List<String[]> pairs(Headers h) {
        List<String[]> out = new ArrayList<>();
        for (Headers.Field f : h) out.add(new String[] {f.name().toLowerCase(Locale.ROOT), f.value()});
        return out;
    }

    private static void check(Vectors.Vector v, List<Object> events) {
        List<Outcome> got = outcomes(events);
        Iterator<Outcome> it = got.iterator();
        int i = 0;
        for (JsonNode e : v.expect()) {
            if (!e.has("echo") && !e.has("reject")) fail(v.id() + ": a parse vector expects only echo and reject");
            if (!it.hasNext()) fail(v.id() + ": expected " + e + " as response " + i + "; the core produced only " + events);
            Outcome o = it.next();
            if (e.has("reject")) {
                JsonNode r = e.get("reject");
                assertTrue(o.error() != null, v.id() + ": want a rejection " + r + ", got a request " + o.method() + " " + o.path());
                assertEquals(r.get("status").asInt(), o.error().status, v.id() + ": status (" + o.error().detail() + ")");
                assertEquals(r.get("type").asText(), o.error().type, v.id() + ": type (" + o.error().detail() + ")");
                assertFalse(it.hasNext(), v.id() + ": nothing may follow a rejection");
            } else {
                assertTrue(o.error() == null, () -> v.id() + ": want " + e + ", got rejection " + o.error().status + " "
                        + o.error().type + ": " + o.error().detail());
                checkEcho(v.id() + " response " + i, e.get("echo"), o);
                if (e.has("absent_headers")) {
                    for (JsonNode name : e.get("absent_headers")) {
                        for (String[] h : o.headers()) {
                            assertFalse(h[0].equals(name.asText()), v.id() + ": header " + name + " must be absent");
                        }
                    }
                }
            }
            i++;
        }
    }

    private static void checkEcho(String where, JsonNode want, Outcome got) {
        for (Iterator<Map.Entry<String, JsonNode>> fs = want.fields(); fs.hasNext(); ) {
            Map.Entry<String, JsonNode> f = fs.next();
            JsonNode w = f.getValue();
            switch (f.getKey()) {
                case "method": assertEquals(w.asText(), got.method(), where + ": method"); break;
                case "path": assertEquals(w.asText(), got.path(), where + ": path"); break;
                case "query": assertEquals(w.asText(), got.query(), where + ": query"); break;
                case "headers": checkFields(where + ": headers", w, got.headers()); break;
                case "trailers": checkFields(where + ": trailers", w, got.trailers()); break;
                case "body_b64": assertEquals(w.asText(), Base64.getEncoder().encodeToString(got.body()), where + ": body"); break;
                case "body_len": assertEquals(w.asInt(), got.body().length, where + ": body_len"); break;
                case "request_id": assertEquals(w.asText(), got.requestId(), where + ": request_id"); break;
                default: fail(where + ": unknown echo field " + f.getKey());
            }
        }
    }

    /** Per-name matching of the conformance README's "Field lists". */
    private static void checkFields(String where, JsonNode want, List<String[]> got) {
        if (want.isEmpty()) {
            assertTrue(got.isEmpty(), where + ": want none, got " + render(got));
            return;
        }
        for (JsonNode pair : want) {
            String name = pair.get(0).asText();
            List<String> wantValues = new ArrayList<>();
            for (JsonNode p : want) if (p.get(0).asText().equals(name)) wantValues.add(p.get(1).asText());
            List<String> gotValues = new ArrayList<>();
            for (String[] g : got) if (g[0].equals(name)) gotValues.add(g[1]);
            assertEquals(wantValues, gotValues, where + ": values of " + name + " in " + render(got));
        }
    }

    private static String render(List<String[]> fields) {
        StringBuilder sb = new StringBuilder("[");
        for (String[] f : fields) sb.append(f[0]).append(": ").append(f[1]).append("; ");
        return sb.append(']').toString();
    }
}
