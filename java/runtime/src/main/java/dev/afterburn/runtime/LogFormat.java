package dev.afterburn.runtime;

import java.nio.charset.StandardCharsets;
import java.util.Map;

/**
 * The format of the lines {@link Request#log(String)} writes, from the watchdog's
 * {@code AFTERBURN_LOG_FORMAT} (its {@code log_format} setting): {@code text}, the default,
 * {@code [REQUEST-ID] text}; or {@code json}, one JSON object per line,
 * {@code {"request_id":"REQUEST-ID","msg":"text"}}, which the watchdog, logging JSON itself,
 * merges into its own line for that output (adding the time, the worker and the stream). The
 * library's own records ({@link LibraryLog}) follow the same format, with a level.
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

    /**
     * The format of this process, for records written before or outside the serve loop;
     * text when the variable is malformed, since that very error must still be told.
     */
    static LogFormat ofProcess() {
        try {
            return fromEnvironment(System.getenv());
        } catch (Environment.Invalid e) {
            return TEXT;
        }
    }

    /** One line, newline included, to go out in one write. */
    byte[] line(String requestId, String text) {
        String line;
        if (this == TEXT) {
            line = "[" + requestId + "] " + text + "\n";
        } else {
            line = json("request_id", requestId, "msg", text);
        }
        return line.getBytes(StandardCharsets.UTF_8);
    }

    /**
     * One record of the library's own (a handler's exception, a protocol error, a failed
     * start), newline included, to go out in one write: in text, {@code [REQUEST-ID] text}, or
     * {@code text} outside a request; in json, {@code {"level":"error","msg":"text",
     * "request_id":"REQUEST-ID"}}, the id only when the record belongs to a request (§9.5). A
     * stack trace's newlines stay inside the one line, escaped.
     *
     * @param level {@code error} or {@code warning}
     * @param requestId the request the record belongs to, or null
     */
    byte[] record(String level, String requestId, String text) {
        String line;
        if (this == TEXT) {
            line = (requestId != null ? "[" + requestId + "] " : "") + text + (text.endsWith("\n") ? "" : "\n");
        } else {
            line = json("level", level, "msg", text.endsWith("\n") ? text.substring(0, text.length() - 1) : text,
                    "request_id", requestId);
        }
        return line.getBytes(StandardCharsets.UTF_8);
    }

    /**
     * A JSON object on one line and its newline, of the string fields given as name, value,
     * name, value…, in that order; a field whose value is null is left out.
     */
    private static String json(String... fields) {
        int size = 8;
        for (String f : fields) {
            size += f == null ? 0 : f.length() + 4;
        }
        StringBuilder sb = new StringBuilder(size).append('{');
        for (int i = 0; i < fields.length; i += 2) {
            if (fields[i + 1] == null) {
                continue;
            }
            if (sb.length() > 1) {
                sb.append(',');
            }
            quote(sb, fields[i]);
            sb.append(':');
            quote(sb, fields[i + 1]);
        }
        return sb.append("}\n").toString();
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
