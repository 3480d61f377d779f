package dev.afterburn.examples.orders;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.File;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** The same application and tests under the real watchdog, with two lanes per worker: Spring MVC serves from the pipes. */
class UnderWatchdogIT extends OrdersHttp {
    private static Server server;

    @BeforeAll
    static void start() throws Exception {
        server = Server.underWatchdog("-lanes", "2");
    }

    @AfterAll
    static void stop() throws Exception {
        if (server != null) server.close();
    }

    @Override
    Server server() {
        return server;
    }

    @Test
    void anEscapedExceptionGetsTheProtocolsErrorBody() throws Exception {
        HttpResponse<String> r = server.get("/orders/fail", "X-Request-Id", "fail-1");
        assertEquals(500, r.statusCode());
        assertEquals("handler_error", r.headers().firstValue("AfterBurn-Error").orElse(null), r.body());
        assertEquals("{\"type\":\"handler_error\",\"message\":\"the function failed while handling the request\",\"request_id\":\"fail-1\"}", r.body());
        assertEquals(200, server.get("/orders/ping").statusCode(), "the worker serves on");
    }

    @Test
    void theServletRequestIdIsTheWatchdogs() throws Exception {
        HttpResponse<String> r = server.get("/orders/ping", "X-Request-Id", "rid-77");
        assertEquals("rid-77", r.headers().firstValue("AfterBurn-Request-Id").orElse(null));
        assertEquals("AfterBurn-Servlet/0.1.0", r.headers().firstValue("X-Served-By").orElse(null));
    }

    /**
     * PROTOCOL.md §9.1: a context that fails to start exits non-zero before the handshake, its
     * cause in the log, never a worker that answers. Run in stdio mode with an empty stdin, as a
     * watchdog would start it: nothing may reach the protocol stream (stdout).
     */
    @Test
    void aContextThatFailsToStartExitsNonZeroBeforeTheHandshakeWithItsCause() throws Exception {
        List<String> cmd = Server.java();
        cmd.add("--orders.catalog=file:/nonexistent/catalog.csv");
        ProcessBuilder pb = new ProcessBuilder(cmd).redirectInput(new File("/dev/null"));
        pb.environment().put("AFTERBURN_PROTOCOL", "1");
        pb.environment().put("AFTERBURN_FDS", "0,1");
        Process p = pb.start();
        byte[] stdout = p.getInputStream().readAllBytes();
        String stderr = new String(p.getErrorStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(p.waitFor(60, TimeUnit.SECONDS));
        assertNotEquals(0, p.exitValue(), stderr);
        assertEquals("", new String(stdout, StandardCharsets.ISO_8859_1), "no handshake reply, no log line on the protocol stream");
        assertTrue(stderr.contains("orders: the catalog URL [file:/nonexistent/catalog.csv] does not exist"), stderr);
    }
}
