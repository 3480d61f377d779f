package dev.afterburn.spring.boot;

import dev.afterburn.servlet.ServletContainer;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.springframework.boot.web.server.GracefulShutdownCallback;
import org.springframework.boot.web.server.GracefulShutdownResult;
import org.springframework.boot.web.server.WebServer;

/**
 * Spring Boot's web server, made of the servlet container whose connector is the watchdog's
 * pipe: it never listens on a port. Serving (the handshake, then requests) begins when the
 * application is ready ({@link AfterBurnServing}), not at {@link #start()}, which Spring calls
 * while the context is still refreshing.
 */
public final class AfterBurnWebServer implements WebServer {
    private static final Log log = LogFactory.getLog(AfterBurnWebServer.class);

    private final ServletContainer container;

    AfterBurnWebServer(ServletContainer container) {
        this.container = container;
    }

    /** @return the servlet container behind this server */
    public ServletContainer container() {
        return container;
    }

    @Override
    public void start() {
        log.info("AfterBurn: the servlet context is up; the watchdog's pipes are served once the application is ready (no port)");
    }

    @Override
    public void stop() {
        container.stop();
    }

    /** @return -1: there is no port (Spring Boot then sets {@code local.server.port} to -1) */
    @Override
    public int getPort() {
        return -1;
    }

    /**
     * Graceful shutdown is the watchdog's (PROTOCOL.md §9.4): on SIGTERM it stops taking
     * requests, lets those in flight finish, then closes the request pipes, and the worker
     * closes the application once every lane read EOF between requests, with nothing in
     * flight. When the worker itself is told to stop (a {@code System.exit}, a signal sent to
     * the JVM), there is no one to hand the in-flight requests to: waiting for them could wait
     * on the very request that called {@code exit}, so the answer is immediate.
     */
    @Override
    public void shutDownGracefully(GracefulShutdownCallback callback) {
        callback.shutdownComplete(GracefulShutdownResult.IMMEDIATE);
    }
}
