package dev.afterburn.servlet;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.Charset;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Request parameters (Servlet 6 §3.1): the query string's, decoded as UTF-8, then, for a
 * {@code POST} with {@code Content-Type: application/x-www-form-urlencoded}, the body's,
 * decoded with the request's charset; a name in both keeps the query's values first.
 * {@code +} is a space and a malformed escape stays as it is (what browsers send, and what the
 * runtime's own query parser does).
 */
final class Forms {
    private Forms() {}

    static Map<String, String[]> parameters(PipeRequest request) {
        Map<String, List<String>> acc = new LinkedHashMap<>();
        String q = request.getQueryString();
        if (q != null) parse(q, StandardCharsets.UTF_8, acc);
        if ("POST".equals(request.getMethod()) && isForm(request.getContentType())) {
            try {
                Charset cs = request.bodyCharset();
                byte[] body = request.input().readAllBytes(); // the body is the form: read once, here (§3.1.1)
                parse(new String(body, StandardCharsets.ISO_8859_1), cs, acc);
            } catch (IOException e) {
                throw new UncheckedIOException("afterburn-servlet: reading the form body", e);
            }
        }
        if ("POST".equals(request.getMethod()) && Multipart.isMultipart(request.getContentType()) && request.multipartConfig() != null) {
            // §3.1: the text fields of a multipart form are parameters too (a file part is not)
            try {
                for (jakarta.servlet.http.Part p : request.getParts()) {
                    Multipart.BodyPart part = (Multipart.BodyPart) p;
                    if (part.filename == null) acc.computeIfAbsent(part.name, k -> new ArrayList<>()).add(part.text());
                }
            } catch (IOException e) {
                throw new UncheckedIOException("afterburn-servlet: reading the multipart body", e);
            } catch (jakarta.servlet.ServletException e) {
                throw new IllegalStateException(e.getMessage(), e);
            }
        }
        return freeze(acc);
    }

    static boolean isForm(String contentType) {
        if (contentType == null) return false;
        int semi = contentType.indexOf(';');
        String type = (semi < 0 ? contentType : contentType.substring(0, semi)).strip();
        return type.equalsIgnoreCase("application/x-www-form-urlencoded");
    }

    /**
     * Parses {@code a=1&b=2}; {@code s} holds one char per byte (ISO-8859-1) or is text, and
     * escapes decode to bytes of {@code charset}.
     */
    static void parse(String s, Charset charset, Map<String, List<String>> acc) {
        for (String pair : s.split("&")) {
            if (pair.isEmpty()) continue;
            int eq = pair.indexOf('=');
            String name = decode(eq < 0 ? pair : pair.substring(0, eq), charset);
            String value = eq < 0 ? "" : decode(pair.substring(eq + 1), charset);
            acc.computeIfAbsent(name, k -> new ArrayList<>()).add(value);
        }
    }

    /** Bytes (one char each), {@code +} a space and {@code %XX} a byte, then the bytes read in {@code charset}. */
    static String decode(String s, Charset charset) {
        if (!s.chars().allMatch(c -> c <= 0xFF)) return Paths.decode(s, charset, true); // text, not bytes
        byte[] in = s.getBytes(StandardCharsets.ISO_8859_1);
        byte[] out = new byte[in.length];
        int n = 0;
        for (int i = 0; i < in.length; i++) {
            byte b = in[i];
            if (b == '+') {
                out[n++] = ' ';
            } else if (b == '%' && i + 2 < in.length && hex(in[i + 1]) >= 0 && hex(in[i + 2]) >= 0) {
                out[n++] = (byte) (hex(in[i + 1]) << 4 | hex(in[i + 2]));
                i += 2;
            } else {
                out[n++] = b;
            }
        }
        return new String(out, 0, n, charset);
    }

    private static int hex(byte c) {
        if (c >= '0' && c <= '9') return c - '0';
        if (c >= 'a' && c <= 'f') return c - 'a' + 10;
        if (c >= 'A' && c <= 'F') return c - 'A' + 10;
        return -1;
    }

    static Map<String, String[]> freeze(Map<String, List<String>> acc) {
        Map<String, String[]> out = new LinkedHashMap<>();
        acc.forEach((k, v) -> out.put(k, v.toArray(new String[0])));
        return out;
    }

    /** A forward's query joined with the current parameters, the new values first (Servlet 6 §9.1.1). */
    static Map<String, String[]> merge(String query, Map<String, String[]> current) {
        Map<String, List<String>> acc = new LinkedHashMap<>();
        parse(query, StandardCharsets.UTF_8, acc);
        current.forEach((k, v) -> acc.computeIfAbsent(k, x -> new ArrayList<>()).addAll(List.of(v)));
        return freeze(acc);
    }
}
