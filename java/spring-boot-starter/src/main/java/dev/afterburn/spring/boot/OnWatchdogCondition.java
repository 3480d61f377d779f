package dev.afterburn.spring.boot;

import org.springframework.boot.autoconfigure.condition.ConditionOutcome;
import org.springframework.boot.autoconfigure.condition.SpringBootCondition;
import org.springframework.context.annotation.ConditionContext;
import org.springframework.core.type.AnnotatedTypeMetadata;

/** Matches when the process runs under the watchdog (see {@link AfterBurnEnvironment}). */
final class OnWatchdogCondition extends SpringBootCondition {
    @Override
    public ConditionOutcome getMatchOutcome(ConditionContext context, AnnotatedTypeMetadata metadata) {
        String setting = context.getEnvironment().getProperty(AfterBurnEnvironment.ENABLED);
        boolean on = AfterBurnEnvironment.underWatchdog(System.getenv(), setting);
        String why = setting != null ? AfterBurnEnvironment.ENABLED + "=" + setting
                : on ? "AFTERBURN_FDS or AFTERBURN_PROTOCOL is set" : "neither AFTERBURN_FDS nor AFTERBURN_PROTOCOL is set";
        return on ? ConditionOutcome.match("started by the AfterBurn watchdog (" + why + ")")
                : ConditionOutcome.noMatch("not started by the AfterBurn watchdog (" + why + ")");
    }
}
