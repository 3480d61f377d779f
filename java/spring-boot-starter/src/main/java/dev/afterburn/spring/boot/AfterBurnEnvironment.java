package dev.afterburn.spring.boot;

import java.util.Map;

/**
 * Whether this process was started by the AfterBurn watchdog: it sets {@code AFTERBURN_FDS}
 * and {@code AFTERBURN_PROTOCOL} for every worker (PROTOCOL.md §2.3). The property (or system
 * property) {@code afterburn.enabled} overrides: {@code true} serves the pipes anyway (a legacy
 * watchdog sets neither variable, §11.1), {@code false} never.
 */
final class AfterBurnEnvironment {
    private AfterBurnEnvironment() {}

    static final String ENABLED = "afterburn.enabled";

    /** @param setting the value of afterburn.enabled, or null */
    static boolean underWatchdog(Map<String, String> env, String setting) {
        if (setting != null && !setting.isBlank()) {
            String s = setting.strip();
            if (s.equalsIgnoreCase("true")) return true;
            if (s.equalsIgnoreCase("false")) return false;
            throw new IllegalArgumentException("afterburn-spring-boot-starter: " + ENABLED + " is true or false, got \"" + setting + "\"");
        }
        return env.get("AFTERBURN_FDS") != null || env.get("AFTERBURN_PROTOCOL") != null;
    }
}
