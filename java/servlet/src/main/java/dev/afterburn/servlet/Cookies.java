package dev.afterburn.servlet;

import jakarta.servlet.http.Cookie;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/** Cookies both ways, RFC 6265: {@code Cookie} request fields in, {@code Set-Cookie} field values out. */
final class Cookies {
    private Cookies() {}

    private static final DateTimeFormatter EXPIRES = DateTimeFormatter
            .ofPattern("EEE, dd MMM yyyy HH:mm:ss 'GMT'", Locale.US).withZone(ZoneOffset.UTC);

    /**
     * The cookies of every {@code Cookie} field, in order. A pair without {@code =} or with a
     * name that is not a token is skipped (as browsers and Tomcat's RFC 6265 parser do); a
     * quoted value loses its quotes.
     */
    static Cookie[] parse(List<String> fields) {
        List<Cookie> out = new ArrayList<>();
        for (String field : fields) {
            for (String pair : field.split(";")) {
                int eq = pair.indexOf('=');
                if (eq <= 0) continue;
                String name = pair.substring(0, eq).strip();
                String value = pair.substring(eq + 1).strip();
                if (value.length() >= 2 && value.startsWith("\"") && value.endsWith("\"")) value = value.substring(1, value.length() - 1);
                try {
                    out.add(new Cookie(name, value));
                } catch (IllegalArgumentException e) {
                    // not a token: skipped
                }
            }
        }
        return out.toArray(new Cookie[0]);
    }

    /** The {@code Set-Cookie} value of a cookie; a value with CR, LF or {@code ;} is refused. */
    static String format(Cookie c) {
        String value = c.getValue() == null ? "" : c.getValue();
        for (int i = 0; i < value.length(); i++) {
            char ch = value.charAt(i);
            if (ch == ';' || ch == '\r' || ch == '\n' || ch == ',' || ch == ' ' || ch == '"' || ch == '\\' || ch < 0x20 || ch == 0x7f) {
                throw new IllegalArgumentException("afterburn-servlet: the value of cookie " + c.getName()
                        + " has a character RFC 6265 §4.1.1 does not allow (" + (ch < 0x20 ? "control" : "'" + ch + "'") + ")");
            }
        }
        StringBuilder sb = new StringBuilder(c.getName()).append('=').append(value);
        int maxAge = c.getMaxAge();
        if (maxAge >= 0) {
            sb.append("; Max-Age=").append(maxAge);
            sb.append("; Expires=").append(EXPIRES.format(maxAge == 0 ? Instant.EPOCH : Instant.now().plusSeconds(maxAge)));
        }
        if (c.getDomain() != null) sb.append("; Domain=").append(c.getDomain());
        if (c.getPath() != null) sb.append("; Path=").append(c.getPath());
        if (c.getSecure()) sb.append("; Secure");
        if (c.isHttpOnly()) sb.append("; HttpOnly");
        for (Map.Entry<String, String> a : c.getAttributes().entrySet()) {
            String k = a.getKey();
            if (k.equalsIgnoreCase("Max-Age") || k.equalsIgnoreCase("Expires") || k.equalsIgnoreCase("Domain")
                    || k.equalsIgnoreCase("Path") || k.equalsIgnoreCase("Secure") || k.equalsIgnoreCase("HttpOnly")
                    || k.equalsIgnoreCase("Comment")) {
                continue;
            }
            sb.append("; ").append(k);
            if (a.getValue() != null && !a.getValue().isEmpty()) sb.append('=').append(a.getValue());
        }
        return sb.toString();
    }
}
