package dev.afterburn.spring.boot;

import dev.afterburn.runtime.AfterBurn;
import org.springframework.aot.AotDetector;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.context.event.ApplicationStartingEvent;
import org.springframework.context.ApplicationListener;
import org.springframework.core.Ordered;
import org.springframework.util.ClassUtils;

/**
 * The first thing a Spring Boot application does under the watchdog: open the protocol
 * descriptors and protect stdout (PROTOCOL.md §2.4) before the banner and the logging system
 * take {@code System.out}. Registered in {@code META-INF/spring.factories}, since it runs
 * before there is a context. In fd mode (the default) stdout is a log pipe anyway; in stdio
 * mode this is what keeps the banner off the protocol stream.
 *
 * <p>A reactive (WebFlux) application is refused here, under the watchdog only, with the reason:
 * it would start Netty on a port and never answer the handshake (README, "WebFlux"). So is a
 * start from AOT code generated for the other side of the watchdog ({@link AotBuild}), here or outside it.
 */
public final class ProtectStdout implements ApplicationListener<ApplicationStartingEvent>, Ordered {
    static final String REACTIVE = "afterburn-spring-boot-starter: a reactive (WebFlux) application cannot serve the watchdog's "
            + "pipes; serve it with Spring MVC, or outside the watchdog (afterburn-spring-boot-starter README, \"WebFlux\")";

    @Override
    public void onApplicationEvent(ApplicationStartingEvent event) {
        boolean underWatchdog = AfterBurnEnvironment.underWatchdog(System.getenv(), System.getProperty(AfterBurnEnvironment.ENABLED));
        SpringApplication application = event.getSpringApplication();
        if (AotDetector.useGeneratedArtifacts()) {
            String refused = AotBuild.mismatch(true, ClassUtils.isPresent(AotBuild.GENERATED, application.getClassLoader()), underWatchdog);
            if (refused != null) throw new IllegalStateException(refused);
        }
        if (!underWatchdog) return;
        if (application.getWebApplicationType() == WebApplicationType.REACTIVE) {
            throw new IllegalStateException(REACTIVE);
        }
        AfterBurn.protectStdout();
    }

    @Override
    public int getOrder() {
        return Ordered.HIGHEST_PRECEDENCE;
    }
}
