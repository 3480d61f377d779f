package dev.afterburn.runtime;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.jupiter.api.Test;

/**
 * The query parser (application/x-www-form-urlencoded, WHATWG URL Standard §5.1): each case a
 * raw query and the pairs it means, in order. The same inputs give the same pairs in a
 * browser's {@code new URLSearchParams(raw)}.
 */
class QueryStringTest {
    static Stream<Arguments> cases() {
        return Stream.of(
                Arguments.of("empty", "", Map.of()),
                Arguments.of("one pair", "a=1", Map.of("a", List.of("1"))),
                Arguments.of("repeats keep order", "tag=b&x=1&tag=a", Map.of("tag", List.of("b", "a"), "x", List.of("1"))),
                Arguments.of("plus is a space", "q=a+b++c", Map.of("q", List.of("a b  c"))),
                Arguments.of("escaped plus stays a plus", "q=1%2B1", Map.of("q", List.of("1+1"))),
                Arguments.of("percent-escapes are UTF-8", "q=caf%C3%A9&%E2%82%AC=eur", Map.of("q", List.of("café"), "€", List.of("eur"))),
                Arguments.of("lower-case hex", "q=%c3%a9", Map.of("q", List.of("é"))),
                Arguments.of("name without =", "debug&a=1", Map.of("debug", List.of(""), "a", List.of("1"))),
                Arguments.of("empty value", "a=&b", Map.of("a", List.of(""), "b", List.of(""))),
                Arguments.of("empty name", "=x", Map.of("", List.of("x"))),
                Arguments.of("first = splits", "a=b=c", Map.of("a", List.of("b=c"))),
                Arguments.of("empty pieces skipped", "&&a=1&&&b=2&", Map.of("a", List.of("1"), "b", List.of("2"))),
                Arguments.of("lone percent kept", "p=100%", Map.of("p", List.of("100%"))),
                Arguments.of("one hex digit kept", "p=%4&q=%4", Map.of("p", List.of("%4"), "q", List.of("%4"))),
                Arguments.of("non-hex escape kept", "p=%zz%G1", Map.of("p", List.of("%zz%G1"))),
                Arguments.of("escaped delimiters are data", "a%3Db=c%26d", Map.of("a=b", List.of("c&d"))),
                Arguments.of("not UTF-8 becomes U+FFFD", "p=%FF&q=%C3", Map.of("p", List.of("\uFFFD"), "q", List.of("\uFFFD"))),
                Arguments.of("raw bytes read as Latin-1 on the wire are UTF-8 again", "q=caf\u00c3\u00a9", Map.of("q", List.of("café"))),
                Arguments.of("names are case-sensitive", "A=1&a=2", Map.of("A", List.of("1"), "a", List.of("2"))),
                Arguments.of("hash is data", "a=1#x", Map.of("a", List.of("1#x"))));
    }

    @ParameterizedTest(name = "{0}: {1}")
    @MethodSource("cases")
    void parses(String name, String raw, Map<String, List<String>> want) {
        Map<String, List<String>> got = QueryString.parse(raw);
        assertEquals(want, got, "query " + Ascii.quote(raw));
    }

    @Test
    void namesKeepTheOrderOfTheirFirstAppearanceAndTheMapIsImmutable() {
        Map<String, List<String>> got = QueryString.parse("z=1&a=2&z=3&m");
        assertEquals(List.of("z", "a", "m"), List.copyOf(got.keySet()));
        assertThrows(UnsupportedOperationException.class, () -> got.put("x", List.of()));
        assertThrows(UnsupportedOperationException.class, () -> got.get("z").add("4"));
    }

    @Test
    void requestExposesTheParametersAndTheRawQueryStaysRaw() {
        TestResponse r = TestRequest.get("/s?q=caf%C3%A9+au+lait&tag=a&tag=b&debug").call(req -> Response.ok().body(
                req.query() + "|" + req.queryParams() + "|" + req.queryParam("tag") + "|" + req.queryParam("debug").isEmpty()
                        + "|" + req.queryParam("page")));
        assertEquals("q=caf%C3%A9+au+lait&tag=a&tag=b&debug|{q=[café au lait], tag=[a, b], debug=[]}|a|true|null", r.bodyText());
        assertNull(TestRequest.get("/").call(req -> Response.ok().body(req.queryParams().toString())).headers().first("x"));
        assertEquals("{}", TestRequest.get("/").call(req -> Response.ok().body(req.queryParams().toString())).bodyText());
    }
}
