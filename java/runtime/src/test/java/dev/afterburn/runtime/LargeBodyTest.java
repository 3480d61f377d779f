package dev.afterburn.runtime;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Bodies larger than every buffer of the library, through the serve loop: the core hands out
 * views on the read buffers instead of copies (RequestDecoder), the worker alternates two
 * read buffers, and the response side writes large pieces straight through. These tests pin
 * what that must never break: every byte arrives, once and in order, whatever the reads look
 * like; and the memory used does not grow with the body.
 */
class LargeBodyTest {
    /** Bytes that differ from one position to the next, so a lost or repeated piece shows. */
    static byte[] pattern(int n, long seed) {
        byte[] b = new byte[n];
        new Random(seed).nextBytes(b);
        return b;
    }

    static byte[] ascii(String s) {
        return s.getBytes(StandardCharsets.ISO_8859_1);
    }

    static byte[] concat(byte[]... parts) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        for (byte[] p : parts) out.writeBytes(p);
        return out.toByteArray();
    }

    /** A chunked encoding of {@code body} with chunks of the given size. */
    static byte[] chunked(byte[] body, int chunk) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        for (int i = 0; i < body.length; i += chunk) {
            int n = Math.min(chunk, body.length - i);
            out.writeBytes(ascii(Integer.toHexString(n) + "\r\n"));
            out.write(body, i, n);
            out.writeBytes(ascii("\r\n"));
        }
        out.writeBytes(ascii("0\r\n\r\n"));
        return out.toByteArray();
    }

    /** A request pipe that returns reads of sizes from {@code sizes}, in turn. */
    static InputStream reads(byte[] data, int... sizes) {
        return new InputStream() {
            int pos;
            int turn;

            @Override
            public int read() {
                return pos < data.length ? data[pos++] & 0xff : -1;
            }

            @Override
            public int read(byte[] b, int off, int len) {
                if (pos == data.length) return -1;
                int n = Math.min(Math.min(len, sizes[turn++ % sizes.length]), data.length - pos);
                System.arraycopy(data, pos, b, off, n);
                pos += n;
                return n;
            }
        };
    }

    /** Echoes the body as it is read; declares its length when the request did. */
    static final Handler ECHO = r -> {
        String length = r.headers().first("content-length");
        Response response = Response.ok();
        if (length != null) response.header("Content-Length", length);
        return response.stream(out -> r.body().transferTo(out));
    };

    /** The body of the one response in {@code out}, de-chunked when it is chunked. */
    static byte[] responseBody(byte[] out) {
        String text = new String(out, StandardCharsets.ISO_8859_1);
        int headEnd = text.indexOf("\r\n\r\n") + 4;
        String head = text.substring(0, headEnd);
        if (!head.contains("Transfer-Encoding: chunked")) return Arrays.copyOfRange(out, headEnd, out.length);
        ByteArrayOutputStream body = new ByteArrayOutputStream();
        int i = headEnd;
        while (true) {
            int lineEnd = text.indexOf("\r\n", i);
            int n = Integer.parseInt(text.substring(i, lineEnd), 16);
            if (n == 0) {
                assertEquals(out.length, lineEnd + 4, "bytes after the last chunk");
                return body.toByteArray();
            }
            body.write(out, lineEnd + 2, n);
            assertEquals("\r\n", text.substring(lineEnd + 2 + n, lineEnd + 4 + n), "a chunk not followed by CRLF");
            i = lineEnd + 4 + n;
        }
    }

    static byte[] serve(Handler h, InputStream requests) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        Worker w = new Worker(requests, out, Limits.DEFAULT, OutputStream.nullOutputStream());
        assertEquals(Worker.Outcome.CLOSED, w.serve(h));
        return out.toByteArray();
    }

    /**
     * Reads of odd sizes split chunk-size lines and CRLFs, so the core keeps bytes of one read
     * for the next and the worker must switch buffers: a read into the same buffer would
     * overwrite them. Reads of one size, then of mixed sizes.
     */
    @ParameterizedTest(name = "reads of {0} bytes")
    @ValueSource(ints = {1021, 65_537, Worker.READ_SIZE, 3 * Worker.READ_SIZE + 7})
    void aChunkedBodyLargerThanTheBuffersIsEchoedWholeAndInOrder(int readSize) {
        echoChunked(readSize, readSize);
        echoChunked(readSize, readSize, 13, readSize / 2 + 1);
    }

    private static void echoChunked(int seed, int... readSizes) {
        byte[] body = pattern(3 * Worker.READ_SIZE + 12_345, seed);
        byte[] request = concat(ascii("POST /echo HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n"),
                chunked(body, 999), ascii("GET /after HTTP/1.1\r\nHost: a\r\n\r\n"));
        Handler h = r -> r.path().equals("/after") ? Response.ok().body("next") : ECHO.handle(r);
        byte[] out = serve(h, reads(request, readSizes));
        String text = new String(out, StandardCharsets.ISO_8859_1);
        int second = text.lastIndexOf("HTTP/1.1 200 OK");
        assertTrue(text.endsWith("\r\n\r\nnext"), "the request after the body was answered");
        assertArrayEquals(body, responseBody(Arrays.copyOf(out, second)));
    }

    @ParameterizedTest(name = "reads of {0} bytes")
    @ValueSource(ints = {4093, Worker.READ_SIZE})
    void aBodyWithContentLengthIsEchoedWholeAndInOrder(int readSize) {
        byte[] body = pattern(2 * Worker.READ_SIZE + 99, readSize);
        byte[] request = concat(ascii("POST /echo HTTP/1.1\r\nHost: a\r\nContent-Length: " + body.length + "\r\n\r\n"), body);
        byte[] out = serve(ECHO, reads(request, readSize));
        assertTrue(new String(out, 0, 200, StandardCharsets.ISO_8859_1).contains("Content-Length: " + body.length + "\r\n"));
        assertArrayEquals(body, responseBody(out));
    }

    /** Every way of reading the body sees the same bytes, across the pieces of many reads. */
    @Test
    void readAllBytesSingleBytesAndSkipAgreeAcrossPieces() {
        byte[] body = pattern(300_000, 7);
        byte[] request = concat(ascii("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: " + body.length + "\r\n\r\n"), body);
        Handler h = r -> {
            InputStream in = r.body();
            byte[] got = new byte[body.length];
            for (int i = 0; i < 1000; i++) got[i] = (byte) in.read();
            assertEquals(5000, in.skip(5000));
            byte[] rest = in.readAllBytes();
            System.arraycopy(rest, 0, got, 6000, rest.length);
            assertEquals(body.length - 6000, rest.length);
            assertEquals(-1, in.read());
            assertArrayEquals(Arrays.copyOf(body, 1000), Arrays.copyOf(got, 1000));
            assertArrayEquals(Arrays.copyOfRange(body, 6000, body.length), rest);
            return Response.ok().body("ok");
        };
        byte[] out = serve(h, reads(request, 70_001, 3));
        assertTrue(new String(out, StandardCharsets.ISO_8859_1).endsWith("\r\n\r\nok"), new String(out, StandardCharsets.ISO_8859_1));
    }

    /**
     * A streamed chunked response: small writes are gathered into one chunk per flush, a large
     * write is a chunk of its own, and the bytes keep their order around it.
     */
    @Test
    void smallAndLargeWritesKeepTheirOrderInTheChunks() {
        byte[] big = pattern(ResponseWriter.STREAM_BUFFER, 3);
        Handler h = r -> Response.ok().stream(out -> {
            out.write('a');
            out.write(ascii("bc"));
            out.write(big);
            out.write(ascii("de"));
            out.flush();
            out.write('f');
        });
        byte[] out = serve(h, reads(ascii("GET / HTTP/1.1\r\nHost: a\r\n\r\n"), 1 << 20));
        String text = new String(out, StandardCharsets.ISO_8859_1);
        String chunks = text.substring(text.indexOf("\r\n\r\n") + 4);
        String bigText = new String(big, StandardCharsets.ISO_8859_1);
        assertEquals("3\r\nabc\r\n" + Integer.toHexString(big.length) + "\r\n" + bigText + "\r\n2\r\nde\r\n1\r\nf\r\n0\r\n\r\n", chunks);
    }

    /**
     * Memory is bounded by the buffers, not the body: echoing 32 MiB allocates a small,
     * fixed amount, so no piece of the body is copied into a new array on its way through.
     */
    @Test
    void echoingALargeBodyAllocatesLittleWhateverItsSize() {
        java.lang.management.ThreadMXBean mx = ManagementFactory.getThreadMXBean();
        assumeTrue(mx instanceof com.sun.management.ThreadMXBean, "allocation counting is not available");
        com.sun.management.ThreadMXBean counting = (com.sun.management.ThreadMXBean) mx;
        assumeTrue(counting.isThreadAllocatedMemorySupported() && counting.isThreadAllocatedMemoryEnabled());
        int size = 32 << 20;
        byte[] head = ascii("POST /echo HTTP/1.1\r\nHost: a\r\nContent-Length: " + size + "\r\n\r\n");
        InputStream requests = new InputStream() { // a 32 MiB body without holding it
            long pos;

            @Override
            public int read() {
                throw new UnsupportedOperationException();
            }

            @Override
            public int read(byte[] b, int off, int len) {
                long total = head.length + (long) size;
                if (pos == total) return -1;
                int n = (int) Math.min(Math.min(len, 128 * 1024), total - pos);
                for (int i = 0; i < n; i++) {
                    long p = pos + i;
                    b[off + i] = p < head.length ? head[(int) p] : (byte) p;
                }
                pos += n;
                return n;
            }
        };
        long[] sent = new long[1];
        OutputStream responses = new OutputStream() {
            @Override
            public void write(int b) {
                sent[0]++;
            }

            @Override
            public void write(byte[] b, int off, int len) {
                sent[0] += len;
            }
        };
        Worker w = new Worker(requests, responses, Limits.DEFAULT, OutputStream.nullOutputStream());
        long thread = Thread.currentThread().getId();
        long before = counting.getThreadAllocatedBytes(thread);
        assertEquals(Worker.Outcome.CLOSED, w.serve(ECHO));
        long allocated = counting.getThreadAllocatedBytes(thread) - before;
        assertTrue(sent[0] > size && sent[0] < size + 200, "sent " + sent[0]);
        // Two read buffers, the response buffers and per-read bookkeeping; a copy of every
        // piece would be 32 MiB more.
        assertTrue(allocated < 4 << 20, "echoing 32 MiB allocated " + allocated + " bytes");
    }
}
