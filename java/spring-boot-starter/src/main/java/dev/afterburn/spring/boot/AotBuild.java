package dev.afterburn.spring.boot;

/**
 * Spring AOT ({@code process-aot} when the application is built, {@code -Dspring.aot.enabled=true}
 * when it starts) decides every condition at build time, this starter's too: the generated
 * context serves the watchdog's pipes when {@code process-aot} ran with {@code afterburn.enabled=true}
 * and a port when it did not, whatever the process finds when it starts. Where the build and
 * the start disagree, the application would listen on a port under the watchdog and never answer
 * the handshake (PROTOCOL.md §3.1), or read its standard input as requests outside it; it is
 * refused before it starts, with what to change (README, "Spring AOT").
 */
final class AotBuild {
    private AotBuild() {}

    /** The class process-aot generates for {@link AfterBurnAutoConfiguration}, only when its conditions matched. */
    static final String GENERATED = AfterBurnAutoConfiguration.class.getName() + "__BeanDefinitions";

    static final String PORT_BUILD = "afterburn-spring-boot-starter: started by the AfterBurn watchdog with "
            + "spring.aot.enabled=true, but the application's AOT code was generated without afterburn.enabled=true "
            + "and serves a port, never the watchdog's pipes: run spring-boot-maven-plugin's process-aot with the system "
            + "property afterburn.enabled=true, or start without -Dspring.aot.enabled=true (afterburn-spring-boot-starter README, \"Spring AOT\")";
    static final String PIPE_BUILD = "afterburn-spring-boot-starter: started with spring.aot.enabled=true outside the "
            + "AfterBurn watchdog, but the application's AOT code was generated with afterburn.enabled=true and serves the "
            + "watchdog's pipes, not a port: start it without -Dspring.aot.enabled=true to serve on its port "
            + "(afterburn-spring-boot-starter README, \"Spring AOT\")";

    /**
     * @param aot whether the application starts from its AOT code (spring.aot.enabled)
     * @param builtForPipes whether that code registers this starter's configuration ({@link #GENERATED} exists)
     * @param underWatchdog whether the process runs under the watchdog ({@link AfterBurnEnvironment})
     * @return why the start is refused, or null when build and start agree (or the start is not from AOT code)
     */
    static String mismatch(boolean aot, boolean builtForPipes, boolean underWatchdog) {
        if (!aot || builtForPipes == underWatchdog) return null;
        return underWatchdog ? PORT_BUILD : PIPE_BUILD;
    }
}
