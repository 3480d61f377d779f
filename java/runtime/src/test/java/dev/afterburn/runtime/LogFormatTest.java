package dev.afterburn.runtime;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The request log's two formats (AFTERBURN_LOG_FORMAT): {@code [id] text} and one JSON object
 * per line, {@code {"request_id","msg"}}, read back here with a JSON parser.
 */
class LogFormatTest {
    private static final ObjectMapper JSON = new ObjectMapper();

    @Test
    void textIsTheIdInBracketsThenTheText() {
        assertEquals("[rid-1] cache miss\n", new String(LogFormat.TEXT.line("rid-1", "cache miss"), StandardCharsets.UTF_8));
    }

    @ParameterizedTest
    @ValueSource(strings = {"cache miss", "quote \" backslash \\ slash /", "two\nlines\r\tand \u0001 \u007f",
            "caf\u00e9 \u20ac \ud83d\ude00", "lone \ud83d surrogate", ""})
    void jsonIsOneObjectOnOneLineThatParsesBackToTheText(String text) throws Exception {
        String line = new String(LogFormat.JSON.line("rid-\"2\"", text), StandardCharsets.UTF_8);
        assertTrue(line.endsWith("}\n") && line.indexOf('\n') == line.length() - 1, "one line: " + line);
        JsonNode got = JSON.readTree(line);
        assertEquals(2, got.size(), line);
        assertEquals("rid-\"2\"", got.get("request_id").asText());
        assertEquals(text, got.get("msg").asText(), line); // a lone surrogate too: escaped, not lost
    }

    @Test
    void theVariableChoosesTheFormatAndAnythingElseIsMalformed() {
        assertEquals(LogFormat.TEXT, LogFormat.fromEnvironment(Map.of()));
        assertEquals(LogFormat.TEXT, LogFormat.fromEnvironment(Map.of("AFTERBURN_LOG_FORMAT", "")));
        assertEquals(LogFormat.TEXT, LogFormat.fromEnvironment(Map.of("AFTERBURN_LOG_FORMAT", "text")));
        assertEquals(LogFormat.JSON, LogFormat.fromEnvironment(Map.of("AFTERBURN_LOG_FORMAT", "json")));
        Environment.Invalid e = assertThrows(Environment.Invalid.class,
                () -> LogFormat.fromEnvironment(Map.of("AFTERBURN_LOG_FORMAT", "xml")));
        assertEquals("afterburn: bad AFTERBURN_LOG_FORMAT in environment: \"xml\" (want text or json)", e.getMessage());
    }

    @Test
    void requestLogWritesJsonLinesInOneWriteEachWhenTheWorkerLogsJson() throws Exception {
        String requests = WorkerTest.HANDSHAKE
                + "GET / HTTP/1.1\r\nHost: a\r\nAfterBurn-Request-Id: rid-9\r\n\r\n";
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        WriteLog log = new WriteLog();
        List<String> writes = log.writes();
        Lanes.Lane lane = new Lanes.Lane(1, new ByteArrayInputStream(requests.getBytes(StandardCharsets.ISO_8859_1)), out, new int[0]);
        Worker.Outcome o = Lanes.serve(r -> {
            r.log("first \"line\"");
            r.log("second");
            return Response.status(204);
        }, List.of(lane), null, Limits.DEFAULT, 1, log, LogFormat.JSON);
        assertEquals(Worker.Outcome.CLOSED, o);
        assertEquals(List.of("{\"request_id\":\"rid-9\",\"msg\":\"first \\\"line\\\"\"}\n",
                "{\"request_id\":\"rid-9\",\"msg\":\"second\"}\n"), writes);
    }
}
