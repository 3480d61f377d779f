package dev.afterburn.spring.boot;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.afterburn.runtime.Handler;
import dev.afterburn.runtime.TestRequest;
import dev.afterburn.runtime.TestResponse;
import dev.afterburn.servlet.AfterBurnRequest;
import jakarta.servlet.http.HttpServletRequest;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.boot.web.embedded.tomcat.TomcatWebServer;
import org.springframework.boot.web.servlet.context.ServletWebServerApplicationContext;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.RestController;

/** The starter in a Spring Boot MVC application with Actuator: which server, and what a request through the pipe's handler gets. */
class StarterTest {
    @SpringBootApplication
    @RestController
    static class App {
        static final java.util.concurrent.atomic.AtomicInteger warmups = new java.util.concurrent.atomic.AtomicInteger();

        @GetMapping("/hello")
        Map<String, String> hello(HttpServletRequest req) {
            if (req.getHeader("X-AfterBurn-Warmup") != null) warmups.incrementAndGet();
            return Map.of("hello", "pipe", "request_id", req.getRequestId(),
                    "attribute", String.valueOf(req.getAttribute(AfterBurnRequest.REQUEST_ID)));
        }

        @GetMapping("/boom")
        String boom() {
            throw new IllegalStateException("secret: hunter2");
        }
    }

    private static ConfigurableApplicationContext pipe;
    private static Handler handler;

    @BeforeAll
    static void startUnderTheWatchdog() {
        pipe = SpringApplication.run(App.class, "--afterburn.enabled=true", "--afterburn.serve=false",
                "--spring.main.banner-mode=off", "--management.endpoints.web.exposure.include=health");
        handler = ((AfterBurnWebServer) ((ServletWebServerApplicationContext) pipe).getWebServer()).container().handler();
    }

    @AfterAll
    static void stop() {
        pipe.close();
    }

    @Test
    void underTheWatchdogTheServerIsThePipeAndListensOnNoPort() {
        var server = ((ServletWebServerApplicationContext) pipe).getWebServer();
        assertInstanceOf(AfterBurnWebServer.class, server);
        assertEquals(-1, server.getPort());
        assertEquals("-1", pipe.getEnvironment().getProperty("local.server.port"));
    }

    @Test
    void aControllerAnswersThroughTheHandler() {
        TestResponse r = TestRequest.get("/hello").requestId("rid-boot").call(handler);
        assertEquals(200, r.status(), r.toString());
        assertTrue(r.headers().first("content-type").startsWith("application/json"));
        String body = r.bodyText();
        assertTrue(body.contains("\"hello\":\"pipe\""), body);
        assertTrue(body.contains("\"request_id\":\"rid-boot\""), body);
        assertTrue(body.contains("\"attribute\":\"rid-boot\""), body);
    }

    @Test
    void anUnknownPathGetsSpringBootsOwnErrorBodyThroughTheErrorPage() {
        TestResponse r = TestRequest.get("/nowhere").header("Accept", "application/json").call(handler);
        assertEquals(404, r.status());
        String body = r.bodyText();
        assertTrue(body.contains("\"status\":404") && body.contains("\"path\":\"/nowhere\""), body);
    }

    @Test
    void anExceptionThatEscapesIs500HandlerErrorAndTheWorkerLivesOn() {
        TestResponse r = TestRequest.get("/boom").requestId("rid-boom").call(handler);
        assertEquals(500, r.status());
        assertEquals("handler_error", r.headers().first("afterburn-error"));
        assertTrue(r.bodyText().contains("\"request_id\":\"rid-boom\""), r.bodyText());
        assertFalse(r.bodyText().contains("hunter2"));
        assertEquals(200, TestRequest.get("/hello").call(handler).status(), "the next request is served");
    }

    @Test
    void actuatorHealthIsReachable() {
        TestResponse r = TestRequest.get("/actuator/health").call(handler);
        assertEquals(200, r.status(), r.toString());
        assertTrue(r.bodyText().contains("\"status\":\"UP\""), r.bodyText());
    }

    @Test
    void elsewhereTheApplicationServesOnItsPortAsUsual() {
        try (ConfigurableApplicationContext tomcat = SpringApplication.run(App.class, "--afterburn.enabled=false",
                "--server.port=0", "--spring.main.banner-mode=off")) {
            var server = ((ServletWebServerApplicationContext) tomcat).getWebServer();
            assertInstanceOf(TomcatWebServer.class, server);
            assertTrue(server.getPort() > 0);
        }
    }

    @Test
    void aMalformedSettingIsRefusedByName() {
        Exception e = assertThrows(Exception.class, () -> SpringApplication.run(App.class, "--afterburn.enabled=maybe",
                "--spring.main.banner-mode=off"));
        Throwable t = e;
        while (t.getCause() != null) t = t.getCause();
        assertEquals("afterburn-spring-boot-starter: afterburn.enabled is true or false, got \"maybe\"", t.getMessage());
    }

    @Test
    void aReactiveApplicationIsRefusedUnderTheWatchdogWithTheReason() {
        SpringApplication app = new SpringApplication(App.class);
        app.setWebApplicationType(org.springframework.boot.WebApplicationType.REACTIVE);
        System.setProperty(AfterBurnEnvironment.ENABLED, "true"); // ProtectStdout runs before there are properties
        try {
            IllegalStateException e = assertThrows(IllegalStateException.class, () -> app.run("--spring.main.banner-mode=off"));
            assertEquals(ProtectStdout.REACTIVE, e.getMessage());
        } finally {
            System.clearProperty(AfterBurnEnvironment.ENABLED);
        }
    }

    @Test
    void warmUpRequestsGoThroughTheApplicationMarkedAsSuch() {
        int before = App.warmups.get();
        new AfterBurnServing(null, false, java.util.List.of("/hello", "/hello")).warmUp(handler);
        assertEquals(before + 2, App.warmups.get());
    }

    @Test
    void aWarmUpPathMustBeAPath() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> new AfterBurnServing(null, true, java.util.List.of("hello")));
        assertEquals("afterburn-spring-boot-starter: an afterburn.warmup path starts with /, got \"hello\"", e.getMessage());
    }

    @Test
    void theEnvironmentDecides() {
        assertTrue(AfterBurnEnvironment.underWatchdog(Map.of("AFTERBURN_FDS", "3,4"), null));
        assertTrue(AfterBurnEnvironment.underWatchdog(Map.of("AFTERBURN_PROTOCOL", "1"), null));
        assertFalse(AfterBurnEnvironment.underWatchdog(Map.of(), null));
        assertFalse(AfterBurnEnvironment.underWatchdog(Map.of("AFTERBURN_FDS", "3,4"), "false"));
        assertTrue(AfterBurnEnvironment.underWatchdog(Map.of(), " TRUE "));
    }
}
