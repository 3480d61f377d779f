package dev.afterburn.runtime;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * Reads responses off a response pipe one at a time, as the watchdog does: the head to its
 * blank line, then a body framed by Content-Length or chunked. Names are lower-cased.
 */
final class ResponseReader {
    private final InputStream in;

    ResponseReader(InputStream in) {
        this.in = in;
    }

    /** The next response, or null at EOF before its first byte. */
    ExchangeVectorsTest.Parsed next(boolean noBody) throws IOException {
        String head = line();
        if (head == null) return null;
        int status = Integer.parseInt(head.split(" ", 3)[1]);
        List<String[]> headers = new ArrayList<>();
        for (String l; !(l = need(line())).isEmpty(); ) {
            int colon = l.indexOf(':');
            headers.add(new String[] {l.substring(0, colon).toLowerCase(Locale.ROOT), l.substring(colon + 1).strip()});
        }
        ByteArrayOutputStream body = new ByteArrayOutputStream();
        boolean chunked = "chunked".equals(first(headers, "transfer-encoding"));
        if (noBody || status == 204 || status == 304) return new ExchangeVectorsTest.Parsed(status, headers, new byte[0], chunked, 0);
        if (chunked) {
            for (int size; (size = Integer.parseInt(need(line()), 16)) > 0; ) {
                body.write(bytes(size));
                need(line());
            }
            need(line()); // no trailers from this library
        } else {
            String length = first(headers, "content-length");
            if (length != null) body.write(bytes(Integer.parseInt(length)));
        }
        return new ExchangeVectorsTest.Parsed(status, headers, body.toByteArray(), chunked, 0);
    }

    /** Whether the pipe is at EOF: its writer closed it. Blocks until a byte or EOF. */
    boolean atEof() throws IOException {
        return in.read() < 0;
    }

    static String first(List<String[]> headers, String name) {
        for (String[] h : headers) if (h[0].equals(name)) return h[1];
        return null;
    }

    private static String need(String line) throws IOException {
        if (line == null) throw new IOException("EOF inside a response");
        return line;
    }

    private byte[] bytes(int n) throws IOException {
        byte[] b = new byte[n];
        for (int at = 0; at < n; ) {
            int k = in.read(b, at, n - at);
            if (k < 0) throw new IOException("EOF inside a response body");
            at += k;
        }
        return b;
    }

    /** A CRLF-terminated line without its CRLF; null at EOF before any byte. */
    private String line() throws IOException {
        ByteArrayOutputStream b = new ByteArrayOutputStream();
        for (int c; (c = in.read()) >= 0; ) {
            if (c == '\n') {
                byte[] a = b.toByteArray();
                return new String(a, 0, a.length > 0 && a[a.length - 1] == '\r' ? a.length - 1 : a.length, StandardCharsets.ISO_8859_1);
            }
            b.write(c);
        }
        if (b.size() == 0) return null;
        throw new IOException("EOF inside a line: " + b.toString(StandardCharsets.ISO_8859_1));
    }
}
