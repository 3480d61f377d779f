package dev.afterburn.spring.boot;

import dev.afterburn.runtime.AfterBurn;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.context.event.ApplicationReadyEvent;
import org.springframework.boot.web.context.WebServerApplicationContext;
import org.springframework.context.ApplicationListener;
import org.springframework.context.ConfigurableApplicationContext;

/**
 * Serves the watchdog's pipes once the application is ready: the context refreshed and the
 * runners ran (Spring's own readiness, {@code ReadinessState.ACCEPTING_TRAFFIC}). Only then is
 * the handshake answered (PROTOCOL.md §3.1), so the watchdog never routes a request to an
 * application that is still starting, and an application that fails to start exits before
 * the handshake (§9.1).
 *
 * <p>Lane 1 is served on a thread of its own, {@code afterburn-serve}; lanes 2 to K on the
 * runtime's lane threads. When every lane has read EOF between requests (§9.4), the
 * application context is closed ({@code @PreDestroy}, pools, the servlets' {@code destroy})
 * and the JVM exits with the application's exit code, 0 normally.
 */
public final class AfterBurnServing implements ApplicationListener<ApplicationReadyEvent> {
    private static final Log log = LogFactory.getLog(AfterBurnServing.class);

    private final Integer maxLanes;
    private final boolean serve;

    /**
     * @param maxLanes the most lanes to serve (afterburn.max-lanes), or null for the runtime's default
     * @param serve whether to serve the pipes when the application is ready (afterburn.serve;
     *     false only where something else calls the container's handler, such as a test)
     */
    public AfterBurnServing(Integer maxLanes, boolean serve) {
        if (maxLanes != null && maxLanes < 1) {
            throw new IllegalArgumentException("afterburn-spring-boot-starter: afterburn.max-lanes must be at least 1, got " + maxLanes);
        }
        this.maxLanes = maxLanes;
        this.serve = serve;
    }

    @Override
    public void onApplicationEvent(ApplicationReadyEvent event) {
        if (!serve) return;
        ConfigurableApplicationContext context = event.getApplicationContext();
        if (!(context instanceof WebServerApplicationContext)
                || !(((WebServerApplicationContext) context).getWebServer() instanceof AfterBurnWebServer)) {
            return; // another context (a management child, a test slice): nothing to serve
        }
        AfterBurnWebServer server = (AfterBurnWebServer) ((WebServerApplicationContext) context).getWebServer();
        Thread serving = new Thread(() -> {
            log.info("AfterBurn: serving the watchdog's pipes");
            if (maxLanes == null) AfterBurn.serve(server.container().handler());
            else AfterBurn.serve(server.container().handler(), maxLanes);
            log.info("AfterBurn: the watchdog closed the request pipes (PROTOCOL.md §9.4); closing the application");
            System.exit(SpringApplication.exit(context));
        }, "afterburn-serve");
        serving.start();
    }
}
