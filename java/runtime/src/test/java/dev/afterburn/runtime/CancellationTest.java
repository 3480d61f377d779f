package dev.afterburn.runtime;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The cancellation of PROTOCOL.md §2.5 without pipes: the lines of the cancel pipe, a token
 * that no exchange carries, and the rule that a cancellation never reaches the next exchange
 * (a Java interrupt is cleared before it), also when it races with the end of the exchange.
 */
class CancellationTest {
    @Test
    void cancelLineNamesAToken() {
        assertEquals("T1", CancelPipe.token("cancel T1"));
        assertEquals("a".repeat(64), CancelPipe.token("cancel " + "a".repeat(64)));
    }

    @ParameterizedTest
    @ValueSource(strings = {"", "cancel", "cancel ", "cancel a b", "cancel a-b", "Cancel T1", "cancel  T1", "cancel T1\r",
        "stop T1", "cancel aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"})
    void otherLinesAreNoCancelLines(String line) {
        assertNull(CancelPipe.token(line));
    }

    @Test
    void cancelFiresTheFlagAndInterruptsOnceThenEndClearsTheInterrupt() {
        Cancellations all = new Cancellations();
        Cancellation c = all.begin("T", System.nanoTime(), -1);
        assertFalse(all.cancel("other"), "a token nobody carries is ignored");
        assertFalse(c.fired());
        assertTrue(all.cancel("T"));
        assertTrue(c.fired());
        assertTrue(Thread.currentThread().isInterrupted());
        assertFalse(all.cancel("T"), "fired once");
        all.end(c);
        assertFalse(Thread.currentThread().isInterrupted(), "§2.5: cleared before the next exchange");
        assertFalse(all.cancel("T"), "an ended exchange is no longer carried");
        assertFalse(Thread.currentThread().isInterrupted());
    }

    @Test
    void aCancellationFiredAfterTheEndNeverInterrupts() {
        Cancellations all = new Cancellations();
        Cancellation c = all.begin("T", System.nanoTime(), -1);
        all.end(c);
        assertFalse(c.fire(), "the exchange is over: nothing to cancel");
        assertFalse(Thread.currentThread().isInterrupted());
        assertFalse(c.fired());
    }

    /** The race of a cancel line crossing the response: whoever wins, no interrupt survives end(). */
    @Test
    void aCancellationRacingTheEndNeverLeaksIntoTheNextExchange() throws Exception {
        for (int i = 0; i < 2000; i++) {
            Cancellation c = new Cancellation(Thread.currentThread(), "T");
            Thread canceller = new Thread(c::fire);
            canceller.start();
            if (i % 2 == 0) Thread.onSpinWait();
            c.end();
            joinUninterruptibly(canceller);
            assertFalse(Thread.interrupted(), "round " + i + ": an interrupt outlived its exchange");
        }
    }

    private static void joinUninterruptibly(Thread t) {
        try {
            t.join();
        } catch (InterruptedException e) {
            throw new AssertionError("interrupted after end()", e);
        }
    }

    @Test
    void theDeadlineFiresTheCancellation() throws Exception {
        Cancellations all = new Cancellations();
        Cancellation c = all.begin(null, System.nanoTime(), 50);
        try {
            Thread.sleep(30_000);
        } catch (InterruptedException expected) {
            // woken by the deadline
        }
        assertTrue(c.fired());
        all.end(c);
        assertFalse(Thread.currentThread().isInterrupted());
    }

    @Test
    void aDeadlineBeyondAnyTimerNeverFires() {
        Cancellations all = new Cancellations();
        Cancellation c = all.begin(null, System.nanoTime(), Long.MAX_VALUE / 1_000_000);
        assertFalse(c.fired());
        all.end(c);
    }
}
