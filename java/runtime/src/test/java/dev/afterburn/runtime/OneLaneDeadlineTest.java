package dev.afterburn.runtime;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The library's own deadline (PROTOCOL.md §5.2, §2.5) on ONE lane: no AFTERBURN_STREAM_FDS and
 * no cancel pipe, the handler on the thread that called {@code serve}. The sweeper alone fires
 * the cancellation, {@link Cancellations#DEADLINE_GRACE_MS} after the deadline: an interrupt of
 * the serving thread and {@link Request#cancelled()}; the next exchange starts clean.
 */
@Timeout(value = 30, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
class OneLaneDeadlineTest {
    /** What the handler saw of one request. */
    record Seen(String path, String thread, boolean interrupted, boolean cancelled, long msPastDeadline) {}

    @Test
    void theDeadlineInterruptsTheHandlerAndSetsItsFlagFiftyMillisecondsAfterIt() {
        List<Seen> seen = new CopyOnWriteArrayList<>();
        Handler handler = r -> {
            // The deadline on the monotonic clock (§5.2): head read + AfterBurn-Timeout-Ms.
            long deadline = System.nanoTime() + r.timeRemaining().toNanos();
            boolean interrupted = false;
            try {
                Thread.sleep(r.path().equals("/wait") ? 20_000 : 0);
            } catch (InterruptedException e) {
                interrupted = true;
            }
            long past = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - deadline);
            seen.add(new Seen(r.path(), Thread.currentThread().getName(), interrupted, r.cancelled(), past));
            return Response.ok().body(r.cancelled() ? "cancelled" : "done");
        };
        String requests = WorkerTest.HANDSHAKE
                + "GET /wait HTTP/1.1\r\nHost: a\r\nAfterBurn-Timeout-Ms: 100\r\n\r\n"
                + "GET /next HTTP/1.1\r\nHost: a\r\nAfterBurn-Timeout-Ms: 100\r\n\r\n";
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        Lanes.Lane lane = new Lanes.Lane(1, new ByteArrayInputStream(requests.getBytes(StandardCharsets.ISO_8859_1)),
                out, new int[0]);

        Worker.Outcome outcome = Lanes.serve(handler, List.of(lane), null, Limits.DEFAULT, Lanes.DEFAULT_MAX,
                new ByteArrayOutputStream());

        assertEquals(Worker.Outcome.CLOSED, outcome);
        assertEquals(2, seen.size(), seen.toString());
        Seen waited = seen.get(0);
        assertEquals(Thread.currentThread().getName(), waited.thread(), "one lane: served on the calling thread");
        assertTrue(waited.interrupted(), "the sleep was interrupted: " + waited);
        assertTrue(waited.cancelled(), "request.cancelled(): " + waited);
        assertTrue(waited.msPastDeadline() >= Cancellations.DEADLINE_GRACE_MS,
                "fired " + waited.msPastDeadline() + " ms after the deadline; want >= " + Cancellations.DEADLINE_GRACE_MS);
        assertTrue(waited.msPastDeadline() < 5_000, "fired far too late: " + waited);
        Seen next = seen.get(1);
        assertFalse(next.interrupted() || next.cancelled(), "the cancellation reached the next exchange: " + next);
        String responses = out.toString(StandardCharsets.ISO_8859_1);
        assertTrue(responses.contains("\r\n\r\ncancelled") && responses.endsWith("\r\n\r\ndone"), responses);
    }
}
