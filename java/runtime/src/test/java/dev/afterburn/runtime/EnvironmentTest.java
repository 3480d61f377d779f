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
