package dev.afterburn.runtime;

/**
 * The cancellation of one exchange (PROTOCOL.md §2.5, "Cancellation"; §5.2): a flag the
 * handler polls, {@link Request#cancelled()}, and an interrupt of the thread serving it.
 *
 * <p>Why both: an interrupt wakes a handler blocked in {@code Thread.sleep},
 * {@code Object.wait}, a {@code BlockingQueue}, {@code lockInterruptibly} or an interruptible
 * NIO channel, but not one blocked in a {@code FileInputStream}, a socket's streams or most
 * JDBC drivers; such a handler sees the flag between two steps.
 *
 * <p>The object is the exchange's identity. {@link #fire} interrupts only while the exchange
 * is live, and {@link #end} ends it under the same lock, then clears the serving thread's
 * interrupt: a {@code cancel} line that crossed the response on the pipe, or a deadline sweep
 * that fired as the response was written, can never interrupt the lane's next exchange
 * (§2.5: "a cancellation MUST NOT reach the lane's next exchange").
 */
final class Cancellation {
    private final Thread thread;
    private final String token; // AfterBurn-Exchange (§4.6), or null
    private boolean live = true; // guarded by this
    private volatile boolean fired;
    private long deadlineNanos; // System.nanoTime() at which the sweeper fires it; set before it is swept

    Cancellation(Thread thread, String token) {
        this.thread = thread;
        this.token = token;
    }

    String token() {
        return token;
    }

    void deadline(long nanos) {
        this.deadlineNanos = nanos;
    }

    long deadlineNanos() {
        return deadlineNanos;
    }

    /**
     * Fires the cancellation: sets the flag and interrupts the serving thread, once, and only
     * while the exchange is live.
     *
     * @return whether this call fired it
     */
    synchronized boolean fire() {
        if (!live || fired) return false;
        fired = true;
        thread.interrupt();
        return true;
    }

    /** @return whether the cancellation fired */
    boolean fired() {
        return fired;
    }

    /**
     * Ends the exchange; called by the serving thread once its handler is done. After the
     * lock no {@link #fire} interrupts, so clearing the interrupt here clears the last one.
     */
    void end() {
        if (Thread.currentThread() != thread) throw new IllegalStateException("afterburn: an exchange ended off its thread");
        synchronized (this) {
            live = false;
        }
        Thread.interrupted(); // a stale interrupt must not leak into the next exchange
    }
}
