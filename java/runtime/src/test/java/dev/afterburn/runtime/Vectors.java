package dev.afterburn.runtime;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Reads the shared conformance vectors, {@code conformance/vectors/*.json}, straight from the
 * repository (never a copy), as the conformance README describes them.
 */
final class Vectors {
    private Vectors() {}

    /** The base environment the wire layer always sets (conformance README, "env"). */
    static final Map<String, String> BASE_ENV = Map.of(
            "AFTERBURN_PROTOCOL", "1",
            "AFTERBURN_FDS", "3,4",
            "AFTERBURN_WORKER_ID", "1",
            "AFTERBURN_MAX_HEADER_BYTES", "32768",
            "AFTERBURN_MAX_BODY_BYTES", "67108864");

    /**
     * Vectors this library is known to fail, with why; a listed vector that passes fails the
     * run, so the list cannot go stale (protobuf's conformance does the same).
     */
    static final Map<String, String> KNOWN_FAILURES = Map.of();

    /** Runs {@code check}, or, for a vector of {@link #KNOWN_FAILURES}, checks that it still fails. */
    static void run(Vector v, org.junit.jupiter.api.function.Executable check) throws Throwable {
        String why = KNOWN_FAILURES.get(v.id());
        if (why == null) {
            check.execute();
            return;
        }
        try {
            check.execute();
        } catch (AssertionError expected) {
            return;
        }
        throw new AssertionError(v.id() + " passes now: take it off Vectors.KNOWN_FAILURES (" + why + ")");
    }

    record Vector(String id, String kind, Map<String, String> env, List<byte[]> segments,
                  boolean closeRequestPipe, JsonNode expect) {
        @Override
        public String toString() {
            return id;
        }

        Limits limits() {
            Map<String, String> all = new HashMap<>(BASE_ENV);
            all.putAll(env);
            return Limits.fromEnvironment(all);
        }
    }

    static File directory() {
        String dir = System.getProperty("afterburn.vectors", "../../conformance/vectors");
        return new File(dir);
    }

    static List<Vector> all() throws IOException {
        ObjectMapper mapper = new ObjectMapper();
        File[] files = directory().listFiles((d, name) -> name.endsWith(".json") && !name.equals("schema.json"));
        if (files == null || files.length == 0) throw new IOException("no vectors in " + directory().getAbsolutePath());
        java.util.Arrays.sort(files);
        List<Vector> out = new ArrayList<>();
        for (File f : files) {
            JsonNode doc = mapper.readTree(f);
            for (JsonNode v : doc.get("vectors")) {
                Map<String, String> env = new HashMap<>();
                if (v.has("env")) v.get("env").fields().forEachRemaining(e -> env.put(e.getKey(), e.getValue().asText()));
                List<byte[]> segments = new ArrayList<>();
                for (JsonNode s : v.get("request")) segments.add(segment(s));
                out.add(new Vector(v.get("id").asText(), v.get("kind").asText(), env, segments,
                        v.path("close_request_pipe").asBoolean(false), v.get("expect")));
            }
        }
        return out;
    }

    static List<Vector> ofKind(String kind) throws IOException {
        List<Vector> out = new ArrayList<>();
        for (Vector v : all()) {
            if (v.kind().equals(kind)) out.add(v);
        }
        return out;
    }

    /** A segment: a latin-1 string (one char per byte) or {@code {"repeat", "times"}}. */
    private static byte[] segment(JsonNode s) {
        if (s.isTextual()) return s.asText().getBytes(StandardCharsets.ISO_8859_1);
        byte[] unit = s.get("repeat").asText().getBytes(StandardCharsets.ISO_8859_1);
        int times = s.get("times").asInt();
        byte[] b = new byte[unit.length * times];
        for (int i = 0; i < times; i++) System.arraycopy(unit, 0, b, i * unit.length, unit.length);
        return b;
    }
}
