package dev.afterburn.servlet;

import java.io.ByteArrayOutputStream;
import java.nio.charset.Charset;
import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
import java.util.Deque;

/** Percent-decoding and the canonical path of Servlet 6 §3.5.2, by which servlets are mapped. */
final class Paths {
    private Paths() {}

    /** A path the container refuses (Servlet 6 §3.5.2): answered 400. */
    static final class Rejected extends Exception {
        private static final long serialVersionUID = 1L;

        Rejected(String message) {
            super(message, null, false, false);
        }
    }

    /**
     * The decoded, normalised path: {@code %XX} decoded as UTF-8, {@code .} segments removed,
     * {@code ..} resolved, {@code //} merged. Refused: an encoded {@code /}, {@code \} or NUL,
     * a {@code ..} above the root, path parameters ({@code ;}) kept out of the mapping.
     */
    static String canonical(String rawPath) throws Rejected {
        if (rawPath.isEmpty()) return "/";
        if (rawPath.charAt(0) != '/') throw new Rejected("the path does not start with /: " + rawPath);
        String[] segments = rawPath.substring(1).split("/", -1);
        Deque<String> out = new ArrayDeque<>();
        for (int i = 0; i < segments.length; i++) {
            String seg = segments[i];
            int semi = seg.indexOf(';');
            if (semi >= 0) seg = seg.substring(0, semi); // path parameters are not part of the mapping
            String lower = seg.toLowerCase(java.util.Locale.ROOT);
            if (lower.contains("%2f") || lower.contains("%5c") || lower.contains("%00")) {
                throw new Rejected("an encoded /, \\ or NUL in the path");
            }
            String d = decode(seg, StandardCharsets.UTF_8, false);
            boolean last = i == segments.length - 1;
            if (d.equals(".")) {
                if (last) out.addLast("");
                continue;
            }
            if (d.equals("..")) {
                if (out.isEmpty()) throw new Rejected("the path leaves the root: " + rawPath);
                out.removeLast();
                if (last) out.addLast("");
                continue;
            }
            if (d.isEmpty() && !last) continue; // "//" merged
            out.addLast(d);
        }
        return "/" + String.join("/", out);
    }

    /**
     * Percent-decodes {@code s}; with {@code plus}, {@code +} is a space (form encoding). A
     * malformed escape is kept as it is, as browsers and the runtime's query parser do.
     */
    static String decode(String s, Charset charset, boolean plus) {
        if (s.indexOf('%') < 0 && (!plus || s.indexOf('+') < 0)) return s;
        ByteArrayOutputStream bytes = new ByteArrayOutputStream(s.length());
        StringBuilder sb = new StringBuilder(s.length());
        for (int i = 0; i < s.length(); ) {
            char c = s.charAt(i);
            if (c == '%' && i + 2 < s.length() && hex(s.charAt(i + 1)) >= 0 && hex(s.charAt(i + 2)) >= 0) {
                bytes.write(hex(s.charAt(i + 1)) << 4 | hex(s.charAt(i + 2)));
                i += 3;
                continue;
            }
            if (bytes.size() > 0) {
                sb.append(new String(bytes.toByteArray(), charset));
                bytes.reset();
            }
            sb.append(plus && c == '+' ? ' ' : c);
            i++;
        }
        if (bytes.size() > 0) sb.append(new String(bytes.toByteArray(), charset));
        return sb.toString();
    }

    private static int hex(char c) {
        if (c >= '0' && c <= '9') return c - '0';
        if (c >= 'a' && c <= 'f') return c - 'a' + 10;
        if (c >= 'A' && c <= 'F') return c - 'A' + 10;
        return -1;
    }
}
