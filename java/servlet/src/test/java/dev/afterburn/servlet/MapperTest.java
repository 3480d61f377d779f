package dev.afterburn.servlet;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;

import jakarta.servlet.http.MappingMatch;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

/** Servlet 6 §12.2 mapping, and the canonical path it maps (§3.5.2). */
class MapperTest {
    private static Mapper mapper() {
        PipeContext c = new PipeContext("", MapperTest.class.getClassLoader());
        Mapper m = c.mapper;
        for (String[] p : new String[][] {{"exact", "/catalog"}, {"foo", "/foo/*"}, {"foobar", "/foo/bar/*"},
                {"jsp", "*.jsp"}, {"default", "/"}, {"root", ""}}) {
            m.add(p[1], new ServletEntry(c, p[0], null, jakarta.servlet.http.HttpServlet.class));
        }
        return m;
    }

    @ParameterizedTest(name = "{0} -> {1}: servletPath \"{2}\", pathInfo {3}")
    @CsvSource(nullValues = "null", value = {
        "/catalog, exact, /catalog, null, EXACT",
        "/foo/bar/index.html, foobar, /foo/bar, /index.html, PATH",
        "/foo/bar, foobar, /foo/bar, null, PATH",
        "/foo/baz.jsp, foo, /foo, /baz.jsp, PATH",
        "/catalog/index.jsp, jsp, /catalog/index.jsp, null, EXTENSION",
        "/catalog/racecar.bop, default, /catalog/racecar.bop, null, DEFAULT",
        "/, root, '', /, CONTEXT_ROOT",
        "/foo, foo, /foo, null, PATH",
    })
    void theSpecsExamplesMapAsTable12_2Says(String path, String servlet, String servletPath, String pathInfo, MappingMatch kind) {
        Mapper.Match m = mapper().map(path);
        assertEquals(servlet, m.entry().getName());
        assertEquals(servletPath, m.servletPath());
        assertEquals(pathInfo, m.pathInfo());
        assertEquals(kind, m.kind());
    }

    @ParameterizedTest
    @ValueSource(strings = {"/a*", "a/b", "*.x/y", "/a/*/b", "**.x"})
    void aMalformedPatternIsRefusedByName(String pattern) {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> Mapper.checkPattern(pattern));
        assertEquals("afterburn-servlet: not a servlet URL pattern (Servlet 6 §12.2): \"" + pattern + "\"", e.getMessage());
    }

    @ParameterizedTest(name = "{0} -> {1}")
    @CsvSource({
        "/a/b, /a/b",
        "/a/./b, /a/b",
        "/a/../b, /b",
        "/a//b, /a/b",
        "/caf%C3%A9, /café",
        "/a;jsessionid=1/b, /a/b",
        "'', /",
        "/a/, /a/",
    })
    void pathsAreDecodedAndNormalised(String raw, String canonical) throws Exception {
        assertEquals(canonical, Paths.canonical(raw));
    }

    @ParameterizedTest
    @ValueSource(strings = {"/../etc", "/a/%2e%2e/%2e%2e/x", "/a%2Fb", "/a%00", "/a%5cb"})
    void suspiciousPathsAreRejected(String raw) {
        assertThrows(Paths.Rejected.class, () -> Paths.canonical(raw));
    }

    @org.junit.jupiter.api.Test
    void withoutADefaultServletAnUnmappedPathMapsToNothing() {
        PipeContext c = new PipeContext("", MapperTest.class.getClassLoader());
        c.mapper.add("/x", new ServletEntry(c, "x", null, jakarta.servlet.http.HttpServlet.class));
        assertNull(c.mapper.map("/y"));
    }
}
