package dev.afterburn.servlet;

import jakarta.servlet.http.HttpServletMapping;
import jakarta.servlet.http.MappingMatch;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Servlet mapping, Servlet 6 §12.2: an exact pattern first, then the longest {@code /prefix/*},
 * then an extension {@code *.ext} on the last segment, then the default servlet {@code /}; the
 * empty pattern is the context root.
 */
final class Mapper {
    /** The outcome of mapping a path: the servlet and how the path splits (§3.5). */
    record Match(ServletEntry entry, String servletPath, String pathInfo, String pattern, MappingMatch kind,
                 String matchValue) implements HttpServletMapping {
        @Override
        public String getMatchValue() {
            return matchValue;
        }

        @Override
        public String getPattern() {
            return pattern;
        }

        @Override
        public String getServletName() {
            return entry.getName();
        }

        @Override
        public MappingMatch getMappingMatch() {
            return kind;
        }
    }

    private final Map<String, ServletEntry> patterns = new ConcurrentHashMap<>();

    /** A pattern of §12.2, else IllegalArgumentException naming it. */
    static void checkPattern(String p) {
        if (p == null) throw new IllegalArgumentException("afterburn-servlet: a URL pattern is null");
        boolean ok = p.isEmpty() || p.equals("/") || (p.startsWith("*.") && p.indexOf('/') < 0 && p.length() > 2)
                || (p.startsWith("/") && (p.indexOf('*') < 0 || (p.endsWith("/*") && p.indexOf('*') == p.length() - 1)));
        if (!ok) throw new IllegalArgumentException("afterburn-servlet: not a servlet URL pattern (Servlet 6 §12.2): \"" + p + "\"");
    }

    ServletEntry owner(String pattern) {
        return patterns.get(pattern);
    }

    void add(String pattern, ServletEntry entry) {
        patterns.put(pattern, entry);
    }

    /** Whether a filter's URL pattern matches a path (the same rules, §6.2.4). */
    static boolean matches(String pattern, String path) {
        if (pattern.equals("/*") || pattern.equals("/")) return true;
        if (pattern.isEmpty()) return path.equals("/") || path.isEmpty();
        if (pattern.endsWith("/*")) {
            String prefix = pattern.substring(0, pattern.length() - 2);
            return path.equals(prefix) || path.startsWith(prefix + "/");
        }
        if (pattern.startsWith("*.")) {
            int dot = path.lastIndexOf('.');
            return dot > path.lastIndexOf('/') && path.substring(dot).equals(pattern.substring(1));
        }
        return pattern.equals(path);
    }

    /** Maps a canonical path (below the context path); null when nothing matches and there is no default servlet. */
    Match map(String path) {
        if (path.isEmpty() || path.equals("/")) {
            ServletEntry root = patterns.get("");
            if (root != null) return new Match(root, "", "/", "", MappingMatch.CONTEXT_ROOT, "");
        }
        ServletEntry exact = patterns.get(path);
        if (exact != null && !path.equals("/")) {
            return new Match(exact, path, null, path, MappingMatch.EXACT, path.substring(1));
        }
        // The longest path prefix: /a/b/* before /a/*, /* last.
        for (String p = path; ; ) {
            ServletEntry e = patterns.get(p.equals("/") ? "/*" : p + "/*");
            if (e != null) {
                String servletPath = p.equals("/") ? "" : p;
                String info = path.substring(servletPath.length());
                return new Match(e, servletPath, info.isEmpty() ? null : info, servletPath + "/*", MappingMatch.PATH,
                        info.isEmpty() ? "" : info.substring(1));
            }
            if (p.equals("/")) break;
            int slash = p.lastIndexOf('/');
            p = slash <= 0 ? "/" : p.substring(0, slash);
        }
        int dot = path.lastIndexOf('.');
        if (dot > path.lastIndexOf('/')) {
            ServletEntry e = patterns.get("*" + path.substring(dot));
            if (e != null) {
                return new Match(e, path, null, "*" + path.substring(dot), MappingMatch.EXTENSION, path.substring(1, dot));
            }
        }
        ServletEntry def = patterns.get("/");
        if (def != null) return new Match(def, path, null, "/", MappingMatch.DEFAULT, "");
        return null;
    }
}
