package dev.afterburn.runtime;

import java.io.BufferedInputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/**
 * Several lanes (PROTOCOL.md §2.5) served in-process by {@link Lanes#serve}, on real pipes
 * (FIFOs): the test writes requests and cancel lines and reads responses as the watchdog
 * would, and sees what the library logs.
 */
final class LaneRig implements AutoCloseable {
    private final List<Fifo> requests;
    private final List<Fifo> responses;
    private final List<ResponseReader> readers = new ArrayList<>();
    private final Fifo cancel;
    final CompletableFuture<Worker.Outcome> outcome = new CompletableFuture<>();
    private final StringBuffer log = new StringBuffer();

    LaneRig(Path dir, int lanes, Handler handler) throws IOException, InterruptedException {
        this(dir, lanes, handler, Limits.DEFAULT);
    }

    LaneRig(Path dir, int lanes, Handler handler, Limits limits) throws IOException, InterruptedException {
        requests = Fifo.open(dir, "req", lanes);
        responses = Fifo.open(dir, "resp", lanes);
        cancel = Fifo.open(dir, "cancel", 1).get(0);
        List<Lanes.Lane> served = new ArrayList<>();
        for (int i = 0; i < lanes; i++) {
            served.add(new Lanes.Lane(i + 1, requests.get(i).in, responses.get(i).out, new int[0]));
            readers.add(new ResponseReader(new BufferedInputStream(responses.get(i).in)));
        }
        OutputStream logStream = new OutputStream() {
            @Override
            public void write(int b) {
                log.append((char) b);
            }

            @Override
            public void write(byte[] b, int off, int len) {
                log.append(new String(b, off, len, StandardCharsets.UTF_8));
            }
        };
        Thread t = new Thread(() -> {
            try {
                outcome.complete(Lanes.serve(handler, served, cancel.in, limits, lanes, logStream));
            } catch (Throwable e) {
                outcome.completeExceptionally(e);
            }
        }, "lane-rig");
        t.setDaemon(true);
        t.start();
    }

    /** Writes {@code bytes} to lane {@code n}'s request pipe. */
    void send(int n, String bytes) throws IOException {
        send(n, bytes.getBytes(StandardCharsets.ISO_8859_1));
    }

    void send(int n, byte[] bytes) throws IOException {
        OutputStream out = requests.get(n - 1).out;
        out.write(bytes);
        out.flush();
    }

    /** Writes a line to the cancel pipe, in one write as the watchdog does. */
    void cancelLine(String line) throws IOException {
        cancel.out.write((line + "\n").getBytes(StandardCharsets.ISO_8859_1));
        cancel.out.flush();
    }

    ResponseReader responses(int n) {
        return readers.get(n - 1);
    }

    ExchangeVectorsTest.Parsed response(int n) throws IOException {
        ExchangeVectorsTest.Parsed p = readers.get(n - 1).next(false);
        if (p == null) throw new IOException("EOF on lane " + n + "; log: " + log);
        return p;
    }

    /** Closes lane {@code n}'s request pipe: EOF between requests ends the lane (§9.4). */
    void endLane(int n) {
        Fifo.closeQuietly(requests.get(n - 1).out);
    }

    String log() {
        return log.toString();
    }

    /** Ends every lane and waits for the serve loop's outcome. */
    Worker.Outcome finish() throws Exception {
        for (int i = 1; i <= requests.size(); i++) endLane(i);
        return outcome.get(20, TimeUnit.SECONDS);
    }

    @Override
    public void close() {
        for (Fifo f : requests) Fifo.closeQuietly(f.out);
        Fifo.closeQuietly(cancel.out);
        for (Fifo f : responses) Fifo.closeQuietly(f.in);
    }
}
