package dev.afterburn.spring.boot;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * Which starts from AOT code are refused: those whose build decided the other server (README,
 * "Spring AOT"). That {@link AotBuild#GENERATED} is the name process-aot gives the class,
 * java/cds/spring-cds.sh check tests on a real AOT build (make test-java-cds).
 */
class AotBuildTest {
    @ParameterizedTest(name = "aot={0}, built for the pipes={1}, under the watchdog={2} -> {3}")
    @CsvSource({
        "false, false, false, ",
        "false, false, true,  ",
        "false, true,  false, ",
        "false, true,  true,  ",
        "true,  true,  true,  ",
        "true,  false, false, ",
        "true,  false, true,  PORT_BUILD",
        "true,  true,  false, PIPE_BUILD",
    })
    void refusesABuildForTheOtherServer(boolean aot, boolean builtForPipes, boolean underWatchdog, String want) {
        String expected = want == null ? null : want.equals("PORT_BUILD") ? AotBuild.PORT_BUILD : AotBuild.PIPE_BUILD;
        assertEquals(expected, AotBuild.mismatch(aot, builtForPipes, underWatchdog));
    }
}
