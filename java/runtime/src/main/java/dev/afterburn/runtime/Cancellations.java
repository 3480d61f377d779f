package dev.afterburn.runtime;

import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

/**
 * The exchanges in flight on every lane of the worker, by their AfterBurn-Exchange token
 * (PROTOCOL.md §4.6), so that a {@code cancel TOKEN} line of the cancel pipe (§2.5) reaches
 * the one it names, and the sweeper that fires each exchange's cancellation at its own
 * deadline (§5.2), {@link #DEADLINE_GRACE_MS} after it. One instance serves all lanes; each
 * lane's thread begins and ends its own exchanges, and the cancel pipe's reader and the
 * sweeper fire them.
 *
 * <p>Why a sweeper and not a timer per exchange: a {@code ScheduledThreadPoolExecutor} task
 * per request wakes the timer thread at every schedule and cancel: a one-lane worker served
 * hello at 8 connections on 2 CPUs at 19k requests/s with it and 26k without (bench, lanes
 * scenario, beside 30k before lanes). The
 * library's deadline is a backstop: the watchdog kills a one-lane worker at the deadline
 * (§8.6) and writes the cancel line to a worker with lanes (§2.5). So one thread looks at the
 * exchanges with a deadline every {@link #SWEEP_MS} while there are any, and its cost does not
 * grow with the request rate.
 */
final class Cancellations {
    /**
     * How long after the deadline the library's own sweeper fires, at the earliest. The
     * watchdog's clock decides (§5.2: the library's deadline may fall up to a millisecond
     * before the watchdog's, the value being rounded down): it answers the client {@code 504}
     * and, with lanes, writes the cancel line itself. Were the library to fire first, an
     * interrupted handler's {@code 500} could reach the client in place of that {@code 504}.
     */
    static final long DEADLINE_GRACE_MS = 50;

    /** How often the sweeper looks while exchanges with a deadline are in flight. */
    static final long SWEEP_MS = 10;

    /** How long the sweeper sleeps while none is: an exchange begun meanwhile waits that long at most. */
    private static final long IDLE_SWEEP_MS = 100;

    /** Deadlines further away than this (about 30 years) never fire. */
    private static final long FOREVER_MS = TimeUnit.DAYS.toMillis(365L * 30);

    private final ConcurrentHashMap<String, Cancellation> inFlight = new ConcurrentHashMap<>();
    private final Set<Cancellation> timed = ConcurrentHashMap.newKeySet();
    private volatile Thread sweeper;

    /**
     * Begins an exchange on the calling thread: registers its token and its deadline,
     * {@code timeoutMs} after {@code headReadNanos} (-1: none).
     */
    Cancellation begin(String token, long headReadNanos, long timeoutMs) {
        Thread.interrupted(); // whatever the thread did before, this exchange starts clean
        Cancellation c = new Cancellation(Thread.currentThread(), token);
        if (token != null) inFlight.put(token, c);
        if (timeoutMs >= 0 && timeoutMs < FOREVER_MS) {
            c.deadline(headReadNanos + TimeUnit.MILLISECONDS.toNanos(timeoutMs + DEADLINE_GRACE_MS));
            timed.add(c);
            if (sweeper == null) startSweeper();
        }
        return c;
    }

    private synchronized void startSweeper() {
        if (sweeper != null) return;
        Thread t = new Thread(this::sweep, "afterburn-deadlines");
        t.setDaemon(true); // never keeps the JVM from exiting at EOF (§9.4)
        sweeper = t;
        t.start();
    }

    private void sweep() {
        while (true) {
            boolean any = false;
            long now = System.nanoTime();
            for (Cancellation c : timed) {
                any = true;
                if (now - c.deadlineNanos() >= 0) {
                    c.fire();
                    timed.remove(c);
                }
            }
            LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(any ? SWEEP_MS : IDLE_SWEEP_MS));
        }
    }

    /** Ends an exchange on its thread: no cancellation of it fires after this. */
    void end(Cancellation c) {
        if (c.token() != null) inFlight.remove(c.token(), c);
        timed.remove(c);
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
