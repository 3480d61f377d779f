package dev.afterburn.runtime;

import java.util.Arrays;

/**
 * The raw-byte checks of PROTOCOL.md §4.3 that Netty's decoder cannot report after the fact.
 *
 * <p>Netty frames the request, but it is laxer than §4.3 in places that are invisible once
 * a request is decoded: it unfolds obs-fold (rule 4), skips leading empty lines, tolerates
 * several spaces in the request line (rule 2), counts the request line and the field lines
 * against two separate limits (rule 11), accepts {@code Transfer-Encoding: chunked, gzip}
 * as chunked (rule 8) and a request without {@code Host} (rule 10). So the bytes that Netty
 * consumes for a head are also fed here, line by line, and each line is checked before the
 * decoded request is let through. One guard serves one head at a time; {@link #reset()}
 * prepares it for the next.
 */
final class HeadGuard {
    private final int maxHead;
    private final long maxBody;

    private byte[] line = new byte[256]; // the line being assembled, CRLF included
    private int lineLength;
    private int used; // request line and field lines so far, with their CRLFs (§7.3)
    private boolean requestLineSeen;
    private boolean complete;

    // What the field lines say (rules 6, 7, 8, 10, 13, 14).
    private int hosts;
    private long contentLength = -1;
    private boolean chunked;
    private String requestId; // the first AfterBurn-Request-Id, for error bodies (§8.1)
    private String exchange; // the AfterBurn-Exchange token, once checked (rule 14, §4.6)

    HeadGuard(int maxHead, long maxBody) {
        this.maxHead = maxHead;
        this.maxBody = maxBody;
    }

    void reset() {
        lineLength = 0;
        used = 0;
        requestLineSeen = false;
        complete = false;
        hosts = 0;
        contentLength = -1;
        chunked = false;
        requestId = null;
        exchange = null;
        if (line.length > 4096) line = new byte[256];
    }

    /** Whether no byte of a head has been seen since the last reset: EOF here is clean (§9.4). */
    boolean idle() {
        return !requestLineSeen && lineLength == 0;
    }

    boolean complete() {
        return complete;
    }

    /** Whether the head frames its body as chunked. */
    boolean chunked() {
        return chunked;
    }

    /** The request id named by the head so far, or null (§8.1: error bodies name it when known). */
    String requestId() {
        return requestId;
    }

    /**
     * The exchange token of a head that was read to its end, or null (§4.6: a rejection
     * written after the head was read carries it; one found inside the head does not).
     */
    String exchange() {
        return complete ? exchange : null;
    }

    /**
     * Feeds head bytes {@code b[from, to)} in order. Returns the index just after the empty
     * line that ends the head, or {@code to} when the head goes on.
     */
    int feed(byte[] b, int from, int to) throws ProtocolError {
        for (int i = from; i < to; i++) {
            if (complete) return i;
            byte c = b[i];
            ProtocolError fault = faultAt(lineLength + 1, lineLength > 0 && line[lineLength - 1] == '\r', c);
            if (fault != null) throw fault;
            // faultAt keeps a line under maxHead + 2 bytes, so this stays bounded.
            if (lineLength == line.length) line = Arrays.copyOf(line, line.length * 2);
            line[lineLength++] = c;
            if (c == '\n') endOfLine();
        }
        return to;
    }

    /**
     * The same checks on bytes Netty holds without having consumed them: the rest of a line
     * whose LF has not arrived yet. They are fed again once Netty consumes them; this only
     * makes sure a fault is answered as soon as its byte arrived.
     */
    void checkPending(byte[] b, int from, int to) throws ProtocolError {
        if (complete) return;
        boolean afterCR = lineLength > 0 && line[lineLength - 1] == '\r';
        int count = lineLength;
        for (int i = from; i < to; i++) {
            byte c = b[i];
            ProtocolError fault = faultAt(++count, afterCR, c);
            if (fault != null) throw fault;
            if (c == '\n') return; // a whole line: Netty's next step takes it
            afterCR = c == '\r';
        }
    }

    /**
     * The fault that byte {@code c} makes as the {@code count}-th byte of the current line,
     * or null. The first fault in byte order wins, so that the answer does not depend on how
     * reads split the line: a bare CR (rules 1 and 5) is known once the byte after it
     * arrives; a head too large (rule 11) once the line, its LF still to come, reaches the
     * limit. A lone CR may start the empty line that ends the head, which is not counted.
     */
    private ProtocolError faultAt(int count, boolean afterCR, byte c) {
        if (afterCR && c != '\n') return ProtocolError.badRequest("a line of the request head has a bare CR");
        if (c != '\n' && used + count >= maxHead && !(count == 1 && c == '\r')) {
            return ProtocolError.headersTooLarge(maxHead);
        }
        return null;
    }

    private void endOfLine() throws ProtocolError {
        int n = lineLength;
        lineLength = 0;
        // Rule 1: every line ends in CRLF.
        if (n < 2 || line[n - 2] != '\r') throw ProtocolError.badRequest("a line of the request head ends in a bare LF");
        int end = n - 2; // faultAt refused every CR not followed by LF
        if (!requestLineSeen) {
            if (n > maxHead) throw ProtocolError.headersTooLarge(maxHead);
            used = n;
            requestLineSeen = true;
            checkRequestLine(line, end);
            return;
        }
        if (end == 0) {
            endOfHead();
            return;
        }
        used += n;
        if (used > maxHead) throw ProtocolError.headersTooLarge(maxHead); // rule 11
        checkFieldLine(line, end);
    }

    /** Rule 2: {@code token SP request-target SP HTTP/1.1}, single spaces. */
    private static void checkRequestLine(byte[] b, int end) throws ProtocolError {
        int sp = indexOf(b, 0, end, (byte) ' ');
        if (sp < 0) throw ProtocolError.badRequest("no space in request line " + quoted(b, end));
        if (!Ascii.isToken(b, 0, sp)) throw ProtocolError.badRequest("a method that is not a token in " + quoted(b, end));
        int sp2 = indexOf(b, sp + 1, end, (byte) ' ');
        if (sp2 <= sp + 1) throw ProtocolError.badRequest("no request-target in " + quoted(b, end));
        // Rule 2: an HTTP/1.0 request MAY be accepted.
        if (!isVersion(b, sp2 + 1, end)) {
            throw ProtocolError.badRequest("a version other than HTTP/1.1 in " + quoted(b, end));
        }
        for (int i = sp + 1; i < sp2; i++) {
            int c = b[i] & 0xff;
            if (c < 0x21 || c == 0x7f) throw ProtocolError.badRequest("a control character in " + quoted(b, end));
        }
        // PROTOCOL.md §4.2: origin-form, or the asterisk-form of the handshake. The
        // absolute-form is accepted as RFC 9112 §3.2.2 asks of every server.
        if (b[sp + 1] == '/') return;
        String target = Ascii.latin1(b, sp + 1, sp2);
        if (target.equals("*")) {
            if (!Ascii.latin1(b, 0, sp).equals("OPTIONS")) {
                throw ProtocolError.badRequest("an asterisk-form target outside OPTIONS");
            }
            return;
        }
        if (target.contains("://")) return;
        throw ProtocolError.badRequest("a request-target that is not in origin-form: " + Ascii.quote(target));
    }

    /** The line as text for an error message: a valid request line makes no strings. */
    private static String quoted(byte[] b, int end) {
        return Ascii.quote(Ascii.latin1(b, 0, end));
    }

    /** {@code HTTP/1.1} or {@code HTTP/1.0}, exactly. */
    private static boolean isVersion(byte[] b, int from, int to) {
        if (to - from != 8) return false;
        for (int i = 0; i < 7; i++) {
            if (b[from + i] != "HTTP/1.".charAt(i)) return false;
        }
        return b[from + 7] == '1' || b[from + 7] == '0';
    }

    /** Rules 3, 4 and 5 on one field line, then the framing rules on its value. */
    private void checkFieldLine(byte[] b, int end) throws ProtocolError {
        if (b[0] == ' ' || b[0] == '\t') {
            throw ProtocolError.badRequest("a field line starts with whitespace (obs-fold)"); // rule 4
        }
        int colon = indexOf(b, 0, end, (byte) ':');
        if (colon < 0) throw ProtocolError.badRequest("a field line has no colon: " + Ascii.quote(Ascii.latin1(b, 0, end)));
        if (!Ascii.isToken(b, 0, colon)) {
            throw ProtocolError.badRequest("a field name is not a token: " + Ascii.quote(Ascii.latin1(b, 0, colon))); // rule 3
        }
        int vs = colon + 1;
        int ve = end;
        while (vs < ve && (b[vs] == ' ' || b[vs] == '\t')) vs++;
        while (ve > vs && (b[ve - 1] == ' ' || b[ve - 1] == '\t')) ve--;
        if (indexOf(b, vs, ve, (byte) 0) >= 0) throw ProtocolError.badRequest("a field value has a NUL byte"); // rule 5
        // The value as a string only where a rule reads it: most fields need none.
        if (Ascii.equalsIgnoreCase(b, 0, colon, "host")) {
            if (++hosts > 1) throw ProtocolError.badRequest("more than one Host field"); // rule 10
        } else if (Ascii.equalsIgnoreCase(b, 0, colon, "content-length")) {
            if (contentLength >= 0) throw ProtocolError.badRequest("more than one Content-Length field"); // rule 6
            if (chunked) throw ProtocolError.badRequest("both Content-Length and Transfer-Encoding"); // rule 7
            String value = Ascii.latin1(b, vs, ve);
            contentLength = Ascii.parseDigits(value);
            if (contentLength < 0) throw ProtocolError.badRequest("Content-Length " + Ascii.quote(value)); // rule 6
        } else if (Ascii.equalsIgnoreCase(b, 0, colon, "transfer-encoding")) {
            if (contentLength >= 0) throw ProtocolError.badRequest("both Content-Length and Transfer-Encoding"); // rule 7
            // Rule 8: exactly "chunked". A second line makes the list "chunked, …".
            String value = Ascii.latin1(b, vs, ve);
            if (chunked) throw ProtocolError.notImplemented("chunked, " + value);
            if (!value.equalsIgnoreCase("chunked")) throw ProtocolError.notImplemented(value);
            chunked = true;
        } else if (Ascii.equalsIgnoreCase(b, 0, colon, "afterburn-timeout-ms")) {
            String value = Ascii.latin1(b, vs, ve);
            if (!Ascii.isDigits(value)) throw ProtocolError.badRequest("AfterBurn-Timeout-Ms " + Ascii.quote(value)); // rule 13
        } else if (Ascii.equalsIgnoreCase(b, 0, colon, "afterburn-request-id")) {
            if (requestId == null) requestId = Ascii.latin1(b, vs, ve);
        } else if (Ascii.equalsIgnoreCase(b, 0, colon, "afterburn-exchange")) {
            // Rule 14: one token of 1-64 characters from 0-9 a-z A-Z; a second field is a fault
            // even when equal. A bad first value throws, so a kept token means one was seen.
            if (exchange != null) throw ProtocolError.badRequest("more than one AfterBurn-Exchange field");
            if (ve - vs > 64 || !Ascii.isAlphanumeric(b, vs, ve)) {
                throw ProtocolError.badRequest("AfterBurn-Exchange " + Ascii.quote(Ascii.latin1(b, vs, ve)));
            }
            exchange = Ascii.latin1(b, vs, ve);
        }
    }

    private void endOfHead() throws ProtocolError {
        complete = true;
        if (hosts == 0) throw ProtocolError.badRequest("no Host field"); // rule 10
        if (maxBody > 0 && contentLength > maxBody) throw ProtocolError.bodyTooLarge(maxBody); // rule 12, before any body byte
    }

    private static int indexOf(byte[] b, int from, int to, byte c) {
        for (int i = from; i < to; i++) {
            if (b[i] == c) return i;
        }
        return -1;
    }
}
