package dev.afterburn.runtime;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The library's own records (LibraryLog) in both AFTERBURN_LOG_FORMATs: in text the lines it
 * always wrote, {@code [id] afterburn: …}; in json one object per line, {@code {"level","msg",
 * "request_id"}}, the id only when the record belongs to a request, read back with a JSON
 * parser. A handler's exception inside a request, and a function that cannot start.
 */
@Timeout(value = 60, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
class LibraryLogTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final String AWKWARD = "quote \" backslash \\ two\nlines\r\tcaf\u00e9 \u20ac \ud83d\ude00 \u0001";

    @TempDir
    Path dir;

    @ParameterizedTest
    @ValueSource(strings = {"afterburn: lane 2 closed", AWKWARD, AWKWARD + "\n", ""})
    void jsonRecordIsOneObjectOnOneLineThatParsesBackToTheText(String text) throws Exception {
        String line = new String(LogFormat.JSON.record("error", "rid-\"1\"", text), StandardCharsets.UTF_8);
        assertTrue(line.endsWith("}\n") && line.indexOf('\n') == line.length() - 1, "one line: " + line);
        JsonNode got = JSON.readTree(line);
        assertEquals(List.of("level", "msg", "request_id"), fieldNames(got), line);
        assertEquals("error", got.get("level").asText());
        assertEquals(text.endsWith("\n") ? text.substring(0, text.length() - 1) : text, got.get("msg").asText(), line);
        assertEquals("rid-\"1\"", got.get("request_id").asText());
    }

    @Test
    void jsonRecordOutsideARequestHasNoRequestId() throws Exception {
        JsonNode got = JSON.readTree(LogFormat.JSON.record("warning", null, "afterburn: cannot close descriptor 7"));
        assertEquals(List.of("level", "msg"), fieldNames(got));
        assertEquals("warning", got.get("level").asText());
        assertNull(got.get("request_id"));
    }

    @Test
    void textRecordIsTheLineTheLibraryAlwaysWrote() {
        assertEquals("[rid-1] afterburn: x\n", text(LogFormat.TEXT.record("error", "rid-1", "afterburn: x")));
        assertEquals("afterburn: x\n", text(LogFormat.TEXT.record("error", null, "afterburn: x")));
        assertEquals("afterburn: a\n\tat b\n", text(LogFormat.TEXT.record("error", null, "afterburn: a\n\tat b\n")));
        assertEquals("[r] " + AWKWARD + "\n", text(LogFormat.TEXT.record("warning", "r", AWKWARD)));
    }

    /** §8.3 in json mode: the exception and its stack are one JSON line naming the request. */
    @Test
    void handlerExceptionIsOneJsonRecordWithTheStackAndTheRequestId() throws Exception {
        List<String> writes = serveOneThrowing(LogFormat.JSON);
        assertEquals(1, writes.size(), "one write: " + writes);
        String line = writes.get(0);
        assertTrue(line.endsWith("}\n") && line.indexOf('\n') == line.length() - 1, "one line: " + line);
        JsonNode got = JSON.readTree(line);
        assertEquals(List.of("level", "msg", "request_id"), fieldNames(got), line);
        assertEquals("error", got.get("level").asText());
        assertEquals("rid-\"7\"", got.get("request_id").asText());
        String msg = got.get("msg").asText();
        assertTrue(msg.startsWith("afterburn: handler failed on GET /throw: java.lang.IllegalStateException: "
                + AWKWARD + "\n\tat dev.afterburn.runtime.LibraryLogTest"), msg);
        assertFalse(msg.endsWith("\n"), "the record's newline ends the line, not the msg: " + line);
    }

    @Test
    void handlerExceptionInTextIsTheBracketedIdThenTheStack() {
        List<String> writes = serveOneThrowing(LogFormat.TEXT);
        assertEquals(1, writes.size(), "one write: " + writes);
        assertTrue(writes.get(0).startsWith("[rid-\"7\"] afterburn: handler failed on GET /throw: java.lang.IllegalStateException: "
                + AWKWARD + "\n\tat dev.afterburn.runtime.LibraryLogTest"), writes.get(0));
    }

    /** §9.1: a class that cannot start says why on stderr, in the worker's format. */
    @Test
    void startFailureIsOneJsonRecordInJsonMode() throws Exception {
        String stderr = startMissingClass("json");
        assertTrue(stderr.endsWith("}\n") && stderr.indexOf('\n') == stderr.length() - 1, "one line: " + stderr);
        JsonNode got = JSON.readTree(stderr);
        assertEquals(List.of("level", "msg"), fieldNames(got), stderr);
        assertEquals("error", got.get("level").asText());
        assertTrue(got.get("msg").asText().startsWith(
                "afterburn: initialising no.such.Func\u00e9 failed:\njava.lang.ClassNotFoundException: no.such.Func\u00e9"), stderr);
    }

    @Test
    void startFailureIsTextByDefault() throws Exception {
        String stderr = startMissingClass(null);
        assertTrue(stderr.startsWith("afterburn: initialising no.such.Func\u00e9 failed:\njava.lang.ClassNotFoundException: no.such.Func\u00e9\n"),
                stderr);
    }

    /** The request log's own format check: a malformed variable is told in text (§2.3). */
    @Test
    void malformedFormatIsToldInText() throws Exception {
        String stderr = startMissingClass("xml");
        assertTrue(stderr.startsWith("afterburn: initialising no.such.Func\u00e9 failed:\n"), stderr);
    }

    private static List<String> serveOneThrowing(LogFormat format) {
        String requests = WorkerTest.HANDSHAKE
                + "GET /throw HTTP/1.1\r\nHost: a\r\nAfterBurn-Request-Id: rid-\"7\"\r\n\r\n";
        WriteLog log = new WriteLog();
        List<String> writes = log.writes();
        Worker w = new Worker(new ByteArrayInputStream(requests.getBytes(StandardCharsets.UTF_8)), new ByteArrayOutputStream(),
                Limits.DEFAULT, log).logFormat(format);
        assertEquals(Worker.Outcome.CLOSED, w.serve(r -> {
            throw new IllegalStateException(AWKWARD);
        }));
        return writes;
    }

    /** Starts the launcher on a class that does not exist; its stderr. */
    private String startMissingClass(String logFormat) throws Exception {
        List<String> cmd = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Dsun.stderr.encoding=UTF-8",
                "-cp", System.getProperty("surefire.test.class.path", System.getProperty("java.class.path")),
                Main.class.getName(), "no.such.Func\u00e9"));
        ProcessBuilder pb = new ProcessBuilder(cmd).redirectOutput(ProcessBuilder.Redirect.DISCARD)
                .redirectError(dir.resolve("stderr").toFile());
        pb.environment().put("AFTERBURN_FDS", "0,1");
        if (logFormat != null) pb.environment().put("AFTERBURN_LOG_FORMAT", logFormat);
        Process p = pb.start();
        p.getOutputStream().close();
        assertTrue(p.waitFor(30, TimeUnit.SECONDS));
        assertEquals(1, p.exitValue(), "exit status (§9.1)");
        return Files.readString(dir.resolve("stderr"), StandardCharsets.UTF_8);
    }

    private static List<String> fieldNames(JsonNode n) {
        List<String> names = new ArrayList<>();
        n.fieldNames().forEachRemaining(names::add);
        return names;
    }

    private static String text(byte[] b) {
        return new String(b, StandardCharsets.UTF_8);
    }
}
