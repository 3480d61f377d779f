package dev.afterburn.runtime;

import java.nio.charset.StandardCharsets;
import java.util.Map;

/**
 * The format of the lines {@link Request#log(String)} writes, from the watchdog's
 * {@code AFTERBURN_LOG_FORMAT} (its {@code log_format} setting): {@code text}, the default,
 * {@code [REQUEST-ID] text}; or {@code json}, one JSON object per line,
 * {@code {"request_id":"REQUEST-ID","msg":"text"}}, which the watchdog, logging JSON itself,
 * merges into its own line for that output (adding the time, the worker and the stream).
 */
enum LogFormat {
    TEXT,
    JSON;

    static final String VARIABLE = "AFTERBURN_LOG_FORMAT";

    /**
     * @throws Environment.Invalid when the variable is set to something other than
     *     {@code text} or {@code json} (exit 2, as for every malformed variable, §2.3)
     */
    static LogFormat fromEnvironment(Map<String, String> env) {
        String v = env.get(VARIABLE);
        if (v == null || v.isEmpty() || v.equals("text")) return TEXT;
        if (v.equals("json")) return JSON;
        throw Environment.bad(VARIABLE, v, "text or json");
    }

    /** One line, newline included, to go out in one write. */
    byte[] line(String requestId, String text) {
        String line;
        if (this == TEXT) {
            line = "[" + requestId + "] " + text + "\n";
        } else {
            StringBuilder sb = new StringBuilder(text.length() + requestId.length() + 32);
            sb.append("{\"request_id\":");
            quote(sb, requestId);
            sb.append(",\"msg\":");
            quote(sb, text);
            line = sb.append("}\n").toString();
        }
        return line.getBytes(StandardCharsets.UTF_8);
    }

    /** A JSON string (RFC 8259 §7): quote, backslash and control characters escaped. */
    static void quote(StringBuilder sb, String s) {
        sb.append('"');
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            switch (c) {
                case '"': sb.append("\\\""); break;
                case '\\': sb.append("\\\\"); break;
                case '\n': sb.append("\\n"); break;
                case '\r': sb.append("\\r"); break;
                case '\t': sb.append("\\t"); break;
                default:
                    if (c < 0x20 || c == 0x7f || Character.isSurrogate(c) && !validSurrogate(s, i)) {
                        sb.append(String.format("\\u%04x", (int) c));
                    } else {
                        sb.append(c);
                    }
            }
        }
        sb.append('"');
    }

    /** Whether the surrogate at {@code i} is half of a pair (a lone one would not encode as UTF-8). */
    private static boolean validSurrogate(String s, int i) {
        char c = s.charAt(i);
        if (Character.isHighSurrogate(c)) return i + 1 < s.length() && Character.isLowSurrogate(s.charAt(i + 1));
        return i > 0 && Character.isHighSurrogate(s.charAt(i - 1));
    }
}
