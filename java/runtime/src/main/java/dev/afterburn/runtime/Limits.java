package dev.afterburn.runtime;

import java.util.Map;

/**
 * The request limits of PROTOCOL.md §7.3, read from the environment the watchdog passes
 * (§2.3).
 *
 * @param maxHead bytes of request line and field lines, CRLFs included
 * @param maxBody bytes of de-chunked body; 0 means unlimited
 */
record Limits(int maxHead, long maxBody) {
    /** §7.3: what the watchdog adds to AFTERBURN_MAX_HEADER_BYTES for its own fields. */
    static final int HEAD_SLACK = 1024;
    /** §7.3: the head accepted without AFTERBURN_MAX_HEADER_BYTES. */
    static final int DEFAULT_MAX_HEAD = 65536;

    static final Limits DEFAULT = new Limits(DEFAULT_MAX_HEAD, 0);

    /** Reads the limits; an absent variable gives the default, a malformed one is an error. */
    static Limits fromEnvironment(Map<String, String> env) {
        int maxHead = DEFAULT_MAX_HEAD;
        long maxBody = 0;
        String head = env.get("AFTERBURN_MAX_HEADER_BYTES");
        if (head != null) {
            long n = Ascii.parseDigits(head);
            if (n < 0 || n > (1 << 30)) throw Environment.bad("AFTERBURN_MAX_HEADER_BYTES", head, "a number of bytes");
            maxHead = (int) n + HEAD_SLACK;
        }
        String body = env.get("AFTERBURN_MAX_BODY_BYTES");
        if (body != null) {
            maxBody = Ascii.parseDigits(body);
            if (maxBody < 0) throw Environment.bad("AFTERBURN_MAX_BODY_BYTES", body, "a number of bytes, 0 for unlimited");
        }
        return new Limits(maxHead, maxBody);
    }
}
