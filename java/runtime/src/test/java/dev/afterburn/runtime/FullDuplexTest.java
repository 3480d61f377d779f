package dev.afterburn.runtime;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.PipedInputStream;
import java.io.PipedOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * PROTOCOL.md §6.2: the handler reads one body line and writes it back as a flushed chunk
 * before the next line is even sent. The test only sends the next line after it has read
 * the previous chunk, so it can only pass if both directions stream.
 */
class FullDuplexTest {
    @Test
    void lockstepEchoStreamsBothWays() throws Exception {
        PipedOutputStream toWorker = new PipedOutputStream();
        PipedInputStream requests = new PipedInputStream(toWorker, 64 * 1024);
        PipedOutputStream responses = new PipedOutputStream();
        PipedInputStream fromWorker = new PipedInputStream(responses, 64 * 1024);
        Handler lockstep = req -> Response.ok().stream(out -> {
            InputStream body = req.body();
            ByteArrayOutputStream line = new ByteArrayOutputStream();
            for (int c; (c = body.read()) >= 0; ) {
                line.write(c);
                if (c == '\n') {
                    out.write(line.toByteArray());
                    out.flush();
                    line.reset();
                }
            }
        });
        ExecutorService pool = Executors.newSingleThreadExecutor();
        try {
            Future<Worker.Outcome> served = pool.submit(() ->
                    new Worker(requests, responses, Limits.DEFAULT, OutputStream.nullOutputStream()).serve(lockstep));
            write(toWorker, "POST /lockstep HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n");
            write(toWorker, "4\r\none\n\r\n");
            expect(fromWorker, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n4\r\none\n\r\n");
            write(toWorker, "4\r\ntwo\n\r\n");
            expect(fromWorker, "4\r\ntwo\n\r\n");
            write(toWorker, "0\r\n\r\n");
            expect(fromWorker, "0\r\n\r\n");
            toWorker.close();
            assertEquals(Worker.Outcome.CLOSED, served.get(10, TimeUnit.SECONDS));
        } finally {
            pool.shutdownNow();
        }
    }

    private static void write(OutputStream out, String s) throws IOException {
        out.write(s.getBytes(StandardCharsets.ISO_8859_1));
        out.flush();
    }

    /** Reads exactly the expected bytes (blocking until the worker sent them) and compares. */
    private static void expect(InputStream in, String want) throws IOException {
        assertEquals(want, new String(in.readNBytes(want.length()), StandardCharsets.ISO_8859_1));
    }
}
