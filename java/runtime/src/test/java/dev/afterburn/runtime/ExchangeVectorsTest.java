package dev.afterburn.runtime;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Iterator;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The {@code exchange/} fixture vectors (PROTOCOL.md §4.6) through the serve loop, without a
 * process: the vector's bytes go in, and each response is checked as the conformance suite
 * checks it. The handler below answers the few fixture routes these vectors use, as the
 * conformance README's fixture contract says; a vector that needs another route fails here,
 * so that none is skipped unseen.
 */
class ExchangeVectorsTest {
    private static final ObjectMapper JSON = new ObjectMapper();

    static Stream<Vectors.Vector> exchangeVectors() throws IOException {
        List<Vectors.Vector> out = new ArrayList<>();
        for (Vectors.Vector v : Vectors.ofKind("fixture")) {
            if (v.id().startsWith("exchange/")) out.add(v);
        }
        assertFalse(out.isEmpty(), "exchange vectors in " + Vectors.directory());
        return out.stream();
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("exchangeVectors")
    void exchangeVector(Vectors.Vector v) throws Throwable {
        Vectors.run(v, () -> exchangeVectorChecked(v));
    }

    private static void exchangeVectorChecked(Vectors.Vector v) {
        ByteArrayOutputStream in = new ByteArrayOutputStream();
        for (byte[] s : v.segments()) in.writeBytes(s);
        int[] requests = {0};
        WorkerTest.Run run = WorkerTest.run(r -> route(v, r, ++requests[0]), in.toString(StandardCharsets.ISO_8859_1), v.limits());
        byte[] out = run.out().getBytes(StandardCharsets.ISO_8859_1);
        int at = 0;
        int i = 0;
        for (JsonNode e : v.expect()) {
            if (!e.has("response")) fail(v.id() + ": only response expectations are run here, got " + e);
            JsonNode want = e.get("response");
            String where = v.id() + " response " + i++;
            if (at >= out.length) fail(where + ": missing; the worker wrote " + run.out() + " and logged " + run.logWrites());
            Parsed got = parse(out, at, want.path("no_body").asBoolean(false));
            at = got.end;
            check(where, want, got);
        }
        assertEquals(out.length, at, v.id() + ": bytes after the last response: " + run.out().substring(at));
    }

    /** The fixture routes of conformance/README.md that the exchange vectors use. */
    static Response route(Vectors.Vector v, Request r, int requests) throws Exception {
        String path = r.path();
        if (path.equals("/throw")) throw new IllegalStateException("fixture: /throw");
        if (path.equals("/status")) return Response.status(Integer.parseInt(param(r, "code")));
        if (path.equals("/stream")) {
            int n = Integer.parseInt(param(r, "n"));
            int size = Integer.parseInt(param(r, "size"));
            return Response.ok().stream(out -> {
                for (int i = 0; i < n; i++) {
                    byte[] chunk = new byte[size];
                    java.util.Arrays.fill(chunk, (byte) ('0' + i % 10));
                    out.write(chunk);
                    out.flush();
                }
            });
        }
        ObjectNode body = JSON.createObjectNode();
        if (path.equals("/whoami")) {
            body.put("requests", requests);
        } else if (path.startsWith("/echo")) {
            body.put("method", r.method()).put("path", path).put("query", r.query());
            byte[] bytes = r.bodyBytes();
            body.put("body_b64", Base64.getEncoder().encodeToString(bytes)).put("body_len", bytes.length);
        } else {
            fail(v.id() + ": no route " + path + " in this test; add it as the fixture contract says");
        }
        return Response.ok().header("Content-Type", "application/json").body(JSON.writeValueAsBytes(body));
    }

    private static String param(Request r, String name) {
        for (String pair : r.query().split("&")) {
            if (pair.startsWith(name + "=")) return pair.substring(name.length() + 1);
        }
        return "";
    }

    /** One response off the pipe: the status, its fields (names lower-cased), its de-chunked body. */
    record Parsed(int status, List<String[]> headers, byte[] body, boolean chunked, int end) {}

    private static Parsed parse(byte[] b, int at, boolean noBody) {
        String text = new String(b, StandardCharsets.ISO_8859_1);
        int headEnd = text.indexOf("\r\n\r\n", at);
        if (headEnd < 0) fail("no complete head in " + text.substring(at));
        String[] lines = text.substring(at, headEnd).split("\r\n");
        int status = Integer.parseInt(lines[0].split(" ", 3)[1]);
        List<String[]> headers = new ArrayList<>();
        for (int i = 1; i < lines.length; i++) {
            int colon = lines[i].indexOf(':');
            headers.add(new String[] {lines[i].substring(0, colon).toLowerCase(Locale.ROOT), lines[i].substring(colon + 1).strip()});
        }
        int pos = headEnd + 4;
        ByteArrayOutputStream body = new ByteArrayOutputStream();
        boolean chunked = "chunked".equals(first(headers, "transfer-encoding"));
        if (noBody || status == 204 || status == 304) {
            return new Parsed(status, headers, new byte[0], chunked, pos);
        }
        if (chunked) {
            while (true) {
                int lineEnd = text.indexOf("\r\n", pos);
                int size = Integer.parseInt(text.substring(pos, lineEnd), 16);
                pos = lineEnd + 2;
                if (size == 0) {
                    pos = text.indexOf("\r\n", pos) + 2; // no trailers from this library
                    break;
                }
                body.write(b, pos, size);
                pos += size + 2;
            }
        } else {
            int n = Integer.parseInt(first(headers, "content-length"));
            body.write(b, pos, n);
            pos += n;
        }
        return new Parsed(status, headers, body.toByteArray(), chunked, pos);
    }

    private static String first(List<String[]> headers, String name) {
        for (String[] h : headers) if (h[0].equals(name)) return h[1];
        return null;
    }

    static void check(String where, JsonNode want, Parsed got) {
        for (Iterator<Map.Entry<String, JsonNode>> fs = want.fields(); fs.hasNext(); ) {
            Map.Entry<String, JsonNode> f = fs.next();
            JsonNode w = f.getValue();
            switch (f.getKey()) {
                case "status": assertEquals(w.asInt(), got.status(), where + ": status"); break;
                case "headers":
                    // Per name, as the conformance README's "Field lists".
                    for (JsonNode pair : w) {
                        String name = pair.get(0).asText();
                        List<String> wantValues = new ArrayList<>();
                        for (JsonNode p : w) if (p.get(0).asText().equals(name)) wantValues.add(p.get(1).asText());
                        List<String> gotValues = new ArrayList<>();
                        for (String[] h : got.headers()) if (h[0].equals(name)) gotValues.add(h[1]);
                        assertEquals(wantValues, gotValues, where + ": values of " + name);
                    }
                    break;
                case "absent_headers":
                    for (JsonNode name : w) {
                        assertTrue(first(got.headers(), name.asText()) == null, where + ": " + name + " must be absent");
                    }
                    break;
                case "lists":
                    // A set-valued field: exactly one, holding the member (README "Field lists").
                    for (JsonNode pair : w) {
                        String name = pair.get(0).asText();
                        List<String> gotValues = new ArrayList<>();
                        for (String[] h : got.headers()) if (h[0].equals(name)) gotValues.add(h[1]);
                        assertEquals(1, gotValues.size(), where + ": one " + name + " field");
                        List<String> members = new ArrayList<>();
                        for (String m : gotValues.get(0).split(",")) members.add(m.strip());
                        assertTrue(members.contains(pair.get(1).asText()), where + ": " + name + " " + gotValues + " holds " + pair.get(1));
                    }
                    break;
                case "json":
                    JsonNode body;
                    try {
                        body = JSON.readTree(got.body());
                    } catch (IOException e) {
                        throw new AssertionError(where + ": not JSON: " + new String(got.body(), StandardCharsets.UTF_8), e);
                    }
                    for (Iterator<Map.Entry<String, JsonNode>> js = w.fields(); js.hasNext(); ) {
                        Map.Entry<String, JsonNode> j = js.next();
                        assertEquals(j.getValue(), body.get(j.getKey()), where + ": json " + j.getKey() + " in " + body);
                    }
                    break;
                case "body_b64": assertEquals(w.asText(), Base64.getEncoder().encodeToString(got.body()), where + ": body"); break;
                case "chunked": assertEquals(w.asBoolean(), got.chunked(), where + ": chunked"); break;
                case "no_body": assertEquals(0, got.body().length, where + ": no body"); break;
                default: fail(where + ": this test does not check " + f.getKey() + "; add it");
            }
        }
    }
}
