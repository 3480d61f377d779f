package dev.afterburn.runtime;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The query of a request-target as name/value pairs: the {@code application/x-www-form-urlencoded}
 * parser of the WHATWG URL Standard (§5.1), which is what browsers use for forms and
 * {@code URLSearchParams}, so a query means here what it means to the page that made it.
 *
 * <ul>
 *   <li>The query splits on {@code &}; empty pieces ({@code a=1&&b=2}, a trailing {@code &})
 *       are skipped.</li>
 *   <li>A piece splits on its first {@code =}: {@code a=b=c} is name {@code a}, value
 *       {@code b=c}; a piece without {@code =} is a name with the empty value.</li>
 *   <li>In names and values, {@code +} is a space and {@code %XX} (two hex digits) is the
 *       byte XX; the bytes are then read as UTF-8.</li>
 *   <li>Nothing is rejected: a {@code %} not followed by two hex digits stays as it is
 *       ({@code 100%} is {@code 100%}, {@code %zz} is {@code %zz}), and bytes that are not
 *       UTF-8 become U+FFFD, as the standard says. A handler that must refuse such input
 *       can look at the raw {@link Request#query()}.</li>
 * </ul>
 *
 * <p>The result keeps names in the order of their first appearance and every value of a
 * repeated name in order; it is immutable. Names are case-sensitive (they are data, not
 * HTTP field names). Only {@code ?} starts the query; a {@code #} is not special here, as a
 * client never sends a fragment (RFC 9112 §3.2).
 */
final class QueryString {
    private QueryString() {}

    static Map<String, List<String>> parse(String raw) {
        if (raw.isEmpty()) return Map.of();
        Map<String, List<String>> pairs = new LinkedHashMap<>();
        int from = 0;
        while (from <= raw.length()) {
            int amp = raw.indexOf('&', from);
            int end = amp < 0 ? raw.length() : amp;
            if (end > from) {
                int eq = raw.indexOf('=', from);
                String name = decode(raw, from, eq < 0 || eq > end ? end : eq);
                String value = eq < 0 || eq > end ? "" : decode(raw, eq + 1, end);
                pairs.computeIfAbsent(name, k -> new ArrayList<>(1)).add(value);
            }
            from = end + 1;
        }
        Map<String, List<String>> frozen = new LinkedHashMap<>();
        for (Map.Entry<String, List<String>> e : pairs.entrySet()) frozen.put(e.getKey(), List.copyOf(e.getValue()));
        return Collections.unmodifiableMap(frozen);
    }

    /** {@code +} to space, {@code %XX} to a byte, the bytes as UTF-8 (malformed: U+FFFD). */
    static String decode(String s, int from, int to) {
        boolean plain = true;
        for (int i = from; i < to && plain; i++) {
            char c = s.charAt(i);
            plain = c != '%' && c != '+' && c < 0x80;
        }
        if (plain) return s.substring(from, to);
        ByteArrayOutputStream bytes = new ByteArrayOutputStream(to - from);
        for (int i = from; i < to; i++) {
            char c = s.charAt(i);
            int hi = c == '%' && i + 2 < to ? hex(s.charAt(i + 1)) : -1;
            int lo = hi >= 0 ? hex(s.charAt(i + 2)) : -1;
            if (c == '+') {
                bytes.write(' ');
            } else if (lo >= 0) {
                bytes.write(hi << 4 | lo);
                i += 2;
            } else if (c < 0x100) {
                // The target is read from the wire one byte per char (Latin-1): this is that byte.
                bytes.write(c);
            } else {
                int cp = s.codePointAt(i); // not from the wire: keep the character as UTF-8
                byte[] b = new String(Character.toChars(cp)).getBytes(StandardCharsets.UTF_8);
                bytes.write(b, 0, b.length);
                i += Character.charCount(cp) - 1;
            }
        }
        return bytes.toString(StandardCharsets.UTF_8); // malformed sequences become U+FFFD
    }

    private static int hex(char c) {
        if (c >= '0' && c <= '9') return c - '0';
        if (c >= 'a' && c <= 'f') return c - 'a' + 10;
        if (c >= 'A' && c <= 'F') return c - 'A' + 10;
        return -1;
    }
}
