package dev.afterburn.runtime;

import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.LinkedBlockingQueue;

/**
 * Lanes (PROTOCOL.md §2.5, capability {@code streams}): several exchanges at once in one
 * worker, one AfterBurn/1 stream per pair of pipes, each served by a {@link Worker} on a
 * thread of its own, so that a slow handler or a full response pipe holds its own lane only.
 *
 * <p>Lane 1 is AFTERBURN_FDS; lanes 2 to K are named by AFTERBURN_STREAM_FDS, and the cancel
 * pipe by AFTERBURN_STREAM_CANCEL_FD. The worker serves L = min(K, N) lanes, N its maximum,
 * and closes the descriptors of lanes L + 1 to K at once. A lane that ends (EOF between
 * requests, or a framing error, §8.8) closes its descriptors and the others serve on; the
 * worker is done when every lane ended. With one lane (no AFTERBURN_STREAM_FDS) the lane is
 * served on the calling thread, exactly as before lanes existed.
 */
final class Lanes {
    private Lanes() {}

    /**
     * The most lanes a worker serves unless told otherwise: a thread and about 130 KiB of
     * buffers per lane in use, so 256 lanes stay within a small heap, and a JVM that waits on
     * a database or another service rarely has use for more exchanges in flight than that.
     */
    static final int DEFAULT_MAX = 256;

    /** The system property that sets the maximum, e.g. {@code -Dafterburn.maxLanes=32}. */
    static final String MAX_PROPERTY = "afterburn.maxLanes";

    /** One lane: its pipes, and the inherited descriptors to close when it ends (§2.5). */
    record Lane(int number, InputStream requests, OutputStream responses, int[] descriptors) {}

    /** The maximum from {@link #MAX_PROPERTY}, or {@link #DEFAULT_MAX}. */
    static int maxFromProperty(String value) {
        if (value == null) return DEFAULT_MAX;
        long n = Ascii.parseDigits(value);
        if (n < 1 || n > (1 << 20)) {
            throw new Environment.Invalid("afterburn: bad system property " + MAX_PROPERTY + ": "
                    + Ascii.quote(value) + " (want a number of lanes from 1)");
        }
        return (int) n;
    }

    /**
     * The process shell: opens the lanes the environment names (§2.5), closes the surplus
     * ones and serves the rest.
     *
     * @throws Environment.Invalid when a variable is malformed or names a closed descriptor
     */
    static Worker.Outcome serve(Handler handler, int maxLanes, Map<String, String> env) {
        Limits limits = Limits.fromEnvironment(env);
        LogFormat logFormat = LogFormat.fromEnvironment(env); // malformed: exit 2 before a descriptor is opened
        Environment.Streams first = Environment.protocolStreams();
        int[] firstFds = Environment.descriptors(env);
        int[] more = Environment.streamDescriptors(env);
        int cancelFd = Environment.cancelDescriptor(env);
        boolean several = more.length > 0;
        int lanes = Math.min(1 + more.length / 2, maxLanes);
        for (int i = 2 * (lanes - 1); i < more.length; i++) Descriptors.close(more[i]); // lanes L+1..K
        List<Lane> open = new ArrayList<>();
        open.add(new Lane(1, first.requests(), first.responses(), several ? firstFds : new int[0]));
        for (int n = 2; n <= lanes; n++) {
            int in = more[2 * (n - 2)];
            int out = more[2 * (n - 2) + 1];
            open.add(new Lane(n, Environment.openIn(in, "AFTERBURN_STREAM_FDS"),
                    Environment.openOut(out, "AFTERBURN_STREAM_FDS"), new int[] {in, out}));
        }
        InputStream cancel = cancelFd < 0 ? null : Environment.openIn(cancelFd, "AFTERBURN_STREAM_CANCEL_FD");
        return serve(handler, open, cancel, limits, maxLanes, new FileOutputStream(FileDescriptor.err), logFormat);
    }

    /**
     * Serves {@code lanes} until every one ended.
     *
     * @return CLOSED when every lane read EOF between requests; REFUSED at once when a
     *     handshake failed (§3.4); else FAILED when a lane could not go on (§8.3, §8.8)
     */
    static Worker.Outcome serve(Handler handler, List<Lane> lanes, InputStream cancelPipe, Limits limits,
                                int maxLanes, OutputStream log) {
        return serve(handler, lanes, cancelPipe, limits, maxLanes, log, LogFormat.TEXT);
    }

    /** As above, with the format of the request log's lines (AFTERBURN_LOG_FORMAT). */
    static Worker.Outcome serve(Handler handler, List<Lane> lanes, InputStream cancelPipe, Limits limits,
                                int maxLanes, OutputStream log, LogFormat logFormat) {
        Cancellations cancellations = new Cancellations();
        if (cancelPipe != null) CancelPipe.start(cancelPipe, cancellations);
        if (lanes.size() == 1) return run(handler, lanes.get(0), false, limits, maxLanes, cancellations, log, logFormat);
        LinkedBlockingQueue<Worker.Outcome> ended = new LinkedBlockingQueue<>();
        for (Lane lane : lanes) {
            Thread t = new Thread(() -> ended.add(run(handler, lane, true, limits, maxLanes, cancellations, log, logFormat)),
                    "afterburn-lane-" + lane.number());
            t.start();
        }
        Worker.Outcome outcome = Worker.Outcome.CLOSED;
        for (int i = 0; i < lanes.size(); i++) {
            Worker.Outcome o;
            try {
                o = ended.take();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return Worker.Outcome.FAILED;
            }
            if (o == Worker.Outcome.REFUSED) return o;
            if (o == Worker.Outcome.FAILED) outcome = o;
        }
        return outcome;
    }

    /** Serves one lane to its end, then closes it: the watchdog sees EOF on its response pipe. */
    private static Worker.Outcome run(Handler handler, Lane lane, boolean several, Limits limits, int maxLanes,
                                      Cancellations cancellations, OutputStream log, LogFormat logFormat) {
        // Made on the lane's thread: the serve loop and its Netty codecs belong to it.
        Worker worker = new Worker(lane.requests(), lane.responses(), limits, log,
                lane.number() == 1 ? Worker.READ_SIZE : Worker.LANE_READ_SIZE, maxLanes, cancellations).logFormat(logFormat);
        Worker.Outcome outcome;
        try {
            outcome = worker.serve(handler);
        } catch (RuntimeException | Error e) {
            // A fault of the library itself: this lane cannot go on, the others can.
            new LibraryLog(log, logFormat).error(null, "afterburn: lane " + lane.number() + " failed: ", e);
            outcome = Worker.Outcome.FAILED;
        }
        worker.close();
        if (several) {
            try {
                lane.requests().close();
            } catch (IOException ignored) {
                // nothing to release
            }
            for (int fd : lane.descriptors()) Descriptors.close(fd);
            if (outcome == Worker.Outcome.FAILED) {
                new LibraryLog(log, logFormat).warning(null, "afterburn: lane " + lane.number() + " closed; the other lanes serve on (§2.5)");
            }
        }
        return outcome;
    }
}
