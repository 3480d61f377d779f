package dev.afterburn.runtime;

/** Byte-level helpers for the ASCII grammar of RFC 9110/9112 that the parser rules use. */
final class Ascii {
    private Ascii() {}

    /** The token characters of RFC 9110 §5.6.2. */
    private static final boolean[] TCHAR = new boolean[256];

    static {
        for (int c = '0'; c <= '9'; c++) TCHAR[c] = true;
        for (int c = 'a'; c <= 'z'; c++) {
            TCHAR[c] = true;
            TCHAR[c - 'a' + 'A'] = true;
        }
        for (char c : "!#$%&'*+-.^_`|~".toCharArray()) TCHAR[c] = true;
    }

    static boolean isToken(byte[] b, int from, int to) {
        if (from >= to) return false;
        for (int i = from; i < to; i++) {
            if (!TCHAR[b[i] & 0xff]) return false;
        }
        return true;
    }

    static boolean isToken(CharSequence s) {
        if (s.length() == 0) return false;
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c > 0xff || !TCHAR[c]) return false;
        }
        return true;
    }

    /** One or more characters from {@code 0-9 a-z A-Z} (PROTOCOL.md §4.3 rule 14). */
    static boolean isAlphanumeric(byte[] b, int from, int to) {
        if (from >= to) return false;
        for (int i = from; i < to; i++) {
            int c = b[i];
            if (!(c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z')) return false;
        }
        return true;
    }

    /** One or more ASCII digits (PROTOCOL.md §4.3 rules 6 and 13). */
    static boolean isDigits(CharSequence s) {
        if (s.length() == 0) return false;
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c < '0' || c > '9') return false;
        }
        return true;
    }

    /** Parses digits that fit in 63 bits, or returns -1 (PROTOCOL.md §4.3 rule 6). */
    static long parseDigits(CharSequence s) {
        if (!isDigits(s)) return -1;
        long n = 0;
        for (int i = 0; i < s.length(); i++) {
            int d = s.charAt(i) - '0';
            if (n > (Long.MAX_VALUE - d) / 10) return -1;
            n = n * 10 + d;
        }
        return n;
    }

    /** Parses digits, capping at {@code cap} instead of overflowing. */
    static long saturatingDigits(CharSequence s, long cap) {
        long n = 0;
        for (int i = 0; i < s.length(); i++) {
            n = n * 10 + (s.charAt(i) - '0');
            if (n >= cap) return cap;
        }
        return n;
    }

    static boolean equalsIgnoreCase(byte[] b, int from, int to, String lower) {
        if (to - from != lower.length()) return false;
        for (int i = from; i < to; i++) {
            int c = b[i] & 0xff;
            if (c >= 'A' && c <= 'Z') c += 'a' - 'A';
            if (c != lower.charAt(i - from)) return false;
        }
        return true;
    }

    /** Latin-1 string of raw bytes: every byte stands for one char, as on the wire. */
    static String latin1(byte[] b, int from, int to) {
        return new String(b, from, to - from, java.nio.charset.StandardCharsets.ISO_8859_1);
    }

    /** Quotes a value for a log line, cut at 64 characters, with control bytes escaped. */
    static String quote(String s) {
        StringBuilder sb = new StringBuilder("\"");
        int n = Math.min(s.length(), 64);
        for (int i = 0; i < n; i++) {
            char c = s.charAt(i);
            if (c == '"' || c == '\\') sb.append('\\').append(c);
            else if (c < 0x20 || c == 0x7f) sb.append(String.format("\\x%02x", (int) c));
            else sb.append(c);
        }
        sb.append('"');
        if (s.length() > n) sb.append('…');
        return sb.toString();
    }
}
