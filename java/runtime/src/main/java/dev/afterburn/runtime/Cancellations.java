package dev.afterburn.runtime;

import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;

/**
 * The exchanges in flight on every lane of the worker, by their AfterBurn-Exchange token
 * (PROTOCOL.md §4.6), so that a {@code cancel TOKEN} line of the cancel pipe (§2.5) reaches
 * the one it names, and the timer that fires each exchange's cancellation at its own
 * deadline (§5.2), {@link #DEADLINE_GRACE_MS} after it. One instance serves all lanes; each lane's thread begins and ends its own
 * exchanges, and the cancel pipe's reader and the timer fire them.
 */
final class Cancellations {
    /**
     * How long after the deadline the library's own timer fires. The watchdog's clock decides
     * (§5.2: the library's deadline may fall up to a millisecond before the watchdog's, the
     * value being rounded down): it answers the client {@code 504} and, with lanes, writes the
     * cancel line itself. Were the library to fire first, an interrupted handler's {@code 500}
     * could reach the client in place of that {@code 504}. The timer is the backstop for a
     * watchdog that sends no cancel line (one lane, or none configured).
     */
    static final long DEADLINE_GRACE_MS = 50;

    /** Deadlines further away than this (about 30 years) never fire: no timer is set. */
    private static final long FOREVER_MS = TimeUnit.DAYS.toMillis(365L * 30);

    private final ConcurrentHashMap<String, Cancellation> inFlight = new ConcurrentHashMap<>();

    /** The timer thread, made when the first deadline is set: most handshakes have none. */
    private static final class Timer {
        static final ScheduledThreadPoolExecutor INSTANCE = make();

        private static ScheduledThreadPoolExecutor make() {
            ScheduledThreadPoolExecutor t = new ScheduledThreadPoolExecutor(1, r -> {
                Thread th = new Thread(r, "afterburn-deadlines");
                th.setDaemon(true); // never keeps the JVM from exiting at EOF (§9.4)
                return th;
            });
            t.setRemoveOnCancelPolicy(true); // an exchange that ends in time leaves nothing behind
            return t;
        }
    }

    /**
     * Begins an exchange on the calling thread: registers its token and sets its deadline,
     * {@code timeoutMs} after {@code headReadNanos} (-1: none).
     */
    Cancellation begin(String token, long headReadNanos, long timeoutMs) {
        Thread.interrupted(); // whatever the thread did before, this exchange starts clean
        Cancellation c = new Cancellation(Thread.currentThread(), token);
        if (token != null) inFlight.put(token, c);
        if (timeoutMs >= 0 && timeoutMs < FOREVER_MS) {
            long delay = (timeoutMs + DEADLINE_GRACE_MS) * 1_000_000 - (System.nanoTime() - headReadNanos);
            c.deadline(Timer.INSTANCE.schedule(c::fire, Math.max(delay, 0), TimeUnit.NANOSECONDS));
        }
        return c;
    }

    /** Ends an exchange on its thread: no cancellation of it fires after this. */
    void end(Cancellation c) {
        if (c.token() != null) inFlight.remove(c.token(), c);
        c.end();
    }

    /**
     * §2.5: fires the cancellation of the exchange carrying {@code token}; a token no lane
     * carries (its response may have crossed the line) is ignored.
     *
     * @return whether an exchange was cancelled
     */
    boolean cancel(String token) {
        Cancellation c = inFlight.get(token);
        return c != null && c.fire();
    }
}
