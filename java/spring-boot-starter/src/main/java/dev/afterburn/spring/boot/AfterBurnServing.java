package dev.afterburn.spring.boot;

import dev.afterburn.runtime.AfterBurn;
import dev.afterburn.runtime.Handler;
import dev.afterburn.runtime.TestRequest;
import dev.afterburn.runtime.TestResponse;
import java.util.List;
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
    private final List<String> warmup;

    /**
     * @param maxLanes the most lanes to serve (afterburn.max-lanes), or null for the runtime's default
     * @param serve whether to serve the pipes when the application is ready (afterburn.serve;
     *     false only where something else calls the container's handler, such as a test)
     */
    public AfterBurnServing(Integer maxLanes, boolean serve) {
        this(maxLanes, serve, List.of());
    }

    /**
     * @param maxLanes the most lanes to serve (afterburn.max-lanes), or null for the runtime's default
     * @param serve whether to serve the pipes when the application is ready (afterburn.serve)
     * @param warmup paths to GET through the application before the handshake (afterburn.warmup)
     */
    public AfterBurnServing(Integer maxLanes, boolean serve, List<String> warmup) {
        if (maxLanes != null && maxLanes < 1) {
            throw new IllegalArgumentException("afterburn-spring-boot-starter: afterburn.max-lanes must be at least 1, got " + maxLanes);
        }
        for (String path : warmup) {
            if (!path.startsWith("/")) {
                throw new IllegalArgumentException("afterburn-spring-boot-starter: an afterburn.warmup path starts with /, got \"" + path + "\"");
            }
        }
        this.maxLanes = maxLanes;
        this.serve = serve;
        this.warmup = List.copyOf(warmup);
    }

    /**
     * Sends each warm-up request through the application in-process, on this thread, before the
     * handshake: the first request of a Spring MVC application builds its handler caches and
     * Jackson serialisers and runs cold code, and without this the first client pays for it.
     * Only GETs, and only of the paths the application names: a warm-up must have no effect.
     *
     * @param handler the container's handler
     */
    void warmUp(Handler handler) {
        for (String path : warmup) {
            long start = System.nanoTime();
            TestResponse r = TestRequest.get(path).header("X-AfterBurn-Warmup", "1").call(handler);
            log.info("AfterBurn: warm-up GET " + path + ": " + r.status() + " in " + (System.nanoTime() - start) / 1_000_000 + " ms");
        }
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
            warmUp(server.container().handler());
            log.info("AfterBurn: serving the watchdog's pipes");
            if (maxLanes == null) AfterBurn.serve(server.container().handler());
            else AfterBurn.serve(server.container().handler(), maxLanes);
            log.info("AfterBurn: the watchdog closed the request pipes (PROTOCOL.md §9.4); closing the application");
            System.exit(SpringApplication.exit(context));
        }, "afterburn-serve");
        serving.start();
    }
}
