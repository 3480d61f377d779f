package dev.afterburn.runtime;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** The AFTERBURN_* variables of PROTOCOL.md §2.3 and the limits of §7.3. */
class EnvironmentTest {
    @Test
    void descriptorsComeFromAfterburnFds() {
        assertArrayEquals(new int[] {3, 4}, Environment.descriptors(Map.of("AFTERBURN_FDS", "3,4")));
        assertArrayEquals(new int[] {0, 1}, Environment.descriptors(Map.of("AFTERBURN_FDS", "0,1")));
    }

    @Test
    void withoutAfterburnFdsTheProtocolIsOnStdinAndStdout() {
        assertArrayEquals(new int[] {0, 1}, Environment.descriptors(Map.of()));
    }

    @ParameterizedTest
    @ValueSource(strings = {"3;4", "3", "3,", ",4", "3,4,5", "a,b", " 3,4", "-3,4", "99999999999,4"})
    void malformedAfterburnFdsIsRefused(String value) {
        Environment.Invalid e = assertThrows(Environment.Invalid.class,
                () -> Environment.descriptors(Map.of("AFTERBURN_FDS", value)));
        assertTrue(e.getMessage().startsWith("afterburn: bad AFTERBURN_FDS in environment"), e.getMessage());
    }

    @Test
    void laneDescriptorsComeFromAfterburnStreamFdsAndTheCancelPipeFromItsOwnVariable() {
        assertArrayEquals(new int[] {5, 6, 7, 8}, Environment.streamDescriptors(Map.of("AFTERBURN_STREAM_FDS", "5,6,7,8")));
        assertArrayEquals(new int[0], Environment.streamDescriptors(Map.of()), "absent: one lane (§2.5)");
        assertEquals(9, Environment.cancelDescriptor(Map.of("AFTERBURN_STREAM_CANCEL_FD", "9")));
        assertEquals(-1, Environment.cancelDescriptor(Map.of()));
    }

    @ParameterizedTest
    @ValueSource(strings = {"", "5", "5,6,7", "5,,6,7", "5,6,", " 5,6", "5;6", "a,b", "-5,6", "99999999999,6"})
    void malformedAfterburnStreamFdsIsRefused(String value) {
        Environment.Invalid e = assertThrows(Environment.Invalid.class,
                () -> Environment.streamDescriptors(Map.of("AFTERBURN_STREAM_FDS", value)));
        assertTrue(e.getMessage().startsWith("afterburn: bad AFTERBURN_STREAM_FDS in environment"), e.getMessage());
    }

    @ParameterizedTest
    @ValueSource(strings = {"", "x", "9,10", "-9", " 9"})
    void malformedAfterburnStreamCancelFdIsRefused(String value) {
        Environment.Invalid e = assertThrows(Environment.Invalid.class,
                () -> Environment.cancelDescriptor(Map.of("AFTERBURN_STREAM_CANCEL_FD", value)));
        assertTrue(e.getMessage().startsWith("afterburn: bad AFTERBURN_STREAM_CANCEL_FD in environment"), e.getMessage());
    }

    @Test
    void theMaximumOfLanesIs256UnlessTheSystemPropertySaysOtherwise() {
        assertEquals(256, Lanes.maxFromProperty(null));
        assertEquals(32, Lanes.maxFromProperty("32"));
        assertThrows(Environment.Invalid.class, () -> Lanes.maxFromProperty("0"));
        assertThrows(Environment.Invalid.class, () -> Lanes.maxFromProperty("many"));
    }

    @Test
    void headLimitGetsTheWatchdogsSlackAndBodyLimitZeroIsUnlimited() {
        Limits l = Limits.fromEnvironment(Map.of("AFTERBURN_MAX_HEADER_BYTES", "32768", "AFTERBURN_MAX_BODY_BYTES", "0"));
        assertEquals(32768 + 1024, l.maxHead());
        assertEquals(0, l.maxBody());
    }

    @Test
    void withoutVariablesHeadsUpTo64KiBAndAnyBodyAreAccepted() {
        assertEquals(new Limits(65536, 0), Limits.fromEnvironment(Map.of()));
    }

    @Test
    void malformedLimitsAreRefused() {
        assertThrows(Environment.Invalid.class, () -> Limits.fromEnvironment(Map.of("AFTERBURN_MAX_HEADER_BYTES", "32k")));
        assertThrows(Environment.Invalid.class, () -> Limits.fromEnvironment(Map.of("AFTERBURN_MAX_BODY_BYTES", "-1")));
    }
}
