package dev.afterburn.runtime;

/**
 * The chunked-body rules of PROTOCOL.md §4.3 that Netty is laxer about, checked on the raw
 * bytes Netty consumes for a chunked body.
 *
 * <p>Netty accepts a chunk size of more than 16 hex digits as long as its value fits, and
 * holds the trailer section only to its own header limit. This guard walks the same bytes
 * with the chunked grammar of RFC 9112 §7.1 — chunk line, data, CRLF, …, last chunk,
 * trailer section — and refuses, as the bytes arrive, a chunk size that is not 1–16 hex
 * digits (rule 9), a chunk line or chunk data not followed by CRLF (rules 1 and 9), a
 * trailer section larger than the header limit (rule 9), and a chunk that announces more
 * than the body limit allows (rule 12). Chunk extensions are ignored.
 */
final class ChunkGuard {
    private enum State { SIZE_LINE, DATA, DATA_CR, DATA_LF, TRAILERS, DONE }

    private final int maxHead;
    private final long maxBody;
    private State state = State.SIZE_LINE;
    private final StringBuilder line = new StringBuilder();
    private long remaining; // data bytes left in the current chunk
    private long total; // de-chunked bytes announced so far
    private int trailerBytes;

    ChunkGuard(int maxHead, long maxBody) {
        this.maxHead = maxHead;
        this.maxBody = maxBody;
    }

    void reset() {
        state = State.SIZE_LINE;
        line.setLength(0);
        remaining = 0;
        total = 0;
        trailerBytes = 0;
    }

    /** Feeds body bytes in order; returns the index after the end of the chunked body, or {@code to}. */
    int feed(byte[] b, int from, int to) throws ProtocolError {
        int i = from;
        while (i < to) {
            switch (state) {
                case DATA: {
                    int n = (int) Math.min(remaining, to - i);
                    i += n;
                    remaining -= n;
                    if (remaining == 0) state = State.DATA_CR;
                    break;
                }
                case DATA_CR:
                    if (b[i++] != '\r') throw ProtocolError.badRequest("chunk data not followed by CRLF");
                    state = State.DATA_LF;
                    break;
                case DATA_LF:
                    if (b[i++] != '\n') throw ProtocolError.badRequest("chunk data not followed by CRLF");
                    state = State.SIZE_LINE;
                    break;
                case SIZE_LINE:
                case TRAILERS: {
                    char c = (char) (b[i++] & 0xff);
                    if (line.length() > 0 && line.charAt(line.length() - 1) == '\r' && c != '\n') {
                        throw ProtocolError.badRequest("a bare CR in a chunk or trailer line"); // first fault in byte order
                    }
                    line.append(c);
                    if (c == '\n') {
                        endOfLine();
                    } else if (line.length() + (state == State.TRAILERS ? trailerBytes : 0) > maxHead
                            && !(line.length() == 1 && c == '\r')) { // a lone CR may start the empty last line
                        throw ProtocolError.badRequest(state == State.TRAILERS
                                ? "the trailer section is larger than " + maxHead + " bytes"
                                : "a chunk line is longer than " + maxHead + " bytes");
                    }
                    break;
                }
                case DONE:
                    return i; // Netty ends the body here; what follows is the next request's
            }
        }
        return to;
    }

    private void endOfLine() throws ProtocolError {
        int n = line.length();
        if (n < 2 || line.charAt(n - 2) != '\r') throw ProtocolError.badRequest("a chunk or trailer line is not ended by CRLF");
        String text = line.substring(0, n - 2);
        line.setLength(0);
        if (text.indexOf('\r') >= 0) throw ProtocolError.badRequest("a bare CR in a chunk or trailer line");
        if (state == State.TRAILERS) {
            if (text.isEmpty()) {
                state = State.DONE;
                return;
            }
            trailerBytes += n;
            if (trailerBytes > maxHead) throw ProtocolError.badRequest("the trailer section is larger than " + maxHead + " bytes");
            if (text.charAt(0) == ' ' || text.charAt(0) == '\t') throw ProtocolError.badRequest("a trailer line starts with whitespace (obs-fold)");
            int colon = text.indexOf(':');
            if (colon < 0 || !Ascii.isToken(text.substring(0, colon))) {
                throw ProtocolError.badRequest("a malformed trailer line " + Ascii.quote(text));
            }
            return;
        }
        long size = chunkSize(text);
        if (size == 0) {
            state = State.TRAILERS;
            return;
        }
        if (maxBody > 0 && size > maxBody - total) throw ProtocolError.bodyTooLarge(maxBody); // rule 12
        if (size > Long.MAX_VALUE - total) throw ProtocolError.badRequest("a chunked body longer than 2^63-1 bytes");
        total += size;
        remaining = size;
        state = State.DATA;
    }

    /** Rule 9: 1–16 hex digits, then optional whitespace and extensions, which are ignored. */
    private static long chunkSize(String text) throws ProtocolError {
        int i = 0;
        long n = 0;
        while (i < text.length() && Character.digit(text.charAt(i), 16) >= 0 && text.charAt(i) < 0x80) {
            if (i == 16) throw ProtocolError.badRequest("a chunk size of more than 16 hex digits: " + Ascii.quote(text));
            n = n << 4 | Character.digit(text.charAt(i), 16);
            i++;
        }
        if (i == 0) throw ProtocolError.badRequest("chunk size " + Ascii.quote(text));
        if (i < text.length()) {
            // RFC 9112 §7.1.1: chunk-ext = *( BWS ";" BWS ext-name [ BWS "=" BWS ext-val ] )
            int j = i;
            while (j < text.length() && (text.charAt(j) == ' ' || text.charAt(j) == '\t')) j++;
            if (j == text.length() || text.charAt(j) != ';') throw ProtocolError.badRequest("chunk size " + Ascii.quote(text));
        }
        if (n < 0) throw ProtocolError.badRequest("a chunk size beyond 2^63-1: " + Ascii.quote(text));
        return n;
    }
}
