package dev.afterburn.examples.orders;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.http.HttpResponse;
import org.junit.jupiter.api.Test;

/**
 * The application's own HTTP tests: a plain HTTP client, no MockMvc. The same tests run against
 * the jar on Tomcat ({@link OnTomcatIT}) and under the watchdog ({@link UnderWatchdogIT}): the
 * application is unchanged, only the starter is on its class path.
 */
abstract class OrdersHttp {
    abstract Server server();

    private String why(HttpResponse<String> r) {
        return r.statusCode() + " " + r.headers().map() + " " + r.body() + "\n--- server output ---\n" + server().log();
    }

    private static final String ADA = "{\"customer\":\"Ada\",\"lines\":[{\"product\":\"tea\",\"quantity\":2},{\"product\":\"cake\",\"quantity\":1}]}";

    @Test
    void anOrderIsCreatedWithItsLocationAndReadBack() throws Exception {
        HttpResponse<String> created = server().post("/orders", "application/json", ADA);
        assertEquals(201, created.statusCode(), why(created));
        assertTrue(created.headers().firstValue("Content-Type").orElse("").startsWith("application/json"), why(created));
        String location = created.headers().firstValue("Location").orElseThrow();
        assertTrue(location.matches(".*/orders/\\d+"), location);
        assertTrue(created.body().contains("\"totalCents\":900"), why(created));
        HttpResponse<String> read = server().get(location.substring(location.indexOf("/orders/")));
        assertEquals(200, read.statusCode(), why(read));
        assertTrue(read.body().contains("\"customer\":\"Ada\""), why(read));
    }

    @Test
    void validationErrorsAreTheApplicationsOwn400() throws Exception {
        HttpResponse<String> r = server().post("/orders", "application/json", "{\"customer\":\"\",\"lines\":[{\"product\":\"tea\",\"quantity\":0}]}");
        assertEquals(400, r.statusCode(), why(r));
        assertEquals("{\"error\":\"invalid order\",\"fields\":{\"customer\":\"must not be blank\",\"lines[0].quantity\":\"must be greater than or equal to 1\"}}",
                r.body(), why(r));
    }

    @Test
    void malformedJsonIsSpringsOwn400() throws Exception {
        HttpResponse<String> r = server().post("/orders", "application/json", "{\"customer\": oops");
        assertEquals(400, r.statusCode(), why(r));
        assertTrue(r.body().contains("\"status\":400") && r.body().contains("\"path\":\"/orders\""), why(r));
    }

    @Test
    void theExceptionHandlerAnswersAMissingOrder404() throws Exception {
        HttpResponse<String> r = server().get("/orders/999999");
        assertEquals(404, r.statusCode(), why(r));
        assertEquals("{\"error\":\"no order 999999\"}", r.body(), why(r));
    }

    @Test
    void anUnknownProductIs422() throws Exception {
        HttpResponse<String> r = server().post("/orders", "application/json", "{\"customer\":\"Bo\",\"lines\":[{\"product\":\"caviar\",\"quantity\":1}]}");
        assertEquals(422, r.statusCode(), why(r));
        assertTrue(r.body().contains("unknown product caviar"), why(r));
    }

    @Test
    void theServletFilterRunsOnEveryResponse() throws Exception {
        HttpResponse<String> r = server().get("/orders/ping", "X-Request-Id", "trace-42");
        assertEquals(200, r.statusCode(), why(r));
        assertEquals("trace-42", r.headers().firstValue("X-Order-Trace").orElse(null), why(r));
        assertTrue(r.headers().firstValue("X-Served-By").isPresent(), why(r));
    }

    @Test
    void anUnmappedPathIsSpringBoots404() throws Exception {
        HttpResponse<String> r = server().get("/nowhere", "Accept", "application/json");
        assertEquals(404, r.statusCode(), why(r));
        assertTrue(r.body().contains("\"path\":\"/nowhere\""), why(r));
    }

    @Test
    void aFileUploadedAsAMultipartFormIsQuoted() throws Exception {
        String body = "--b0undary\r\n"
                + "Content-Disposition: form-data; name=\"customer\"\r\n\r\nAda\r\n"
                + "--b0undary\r\n"
                + "Content-Disposition: form-data; name=\"file\"; filename=\"order.csv\"\r\n"
                + "Content-Type: text/csv\r\n\r\ntea,2\ncoffee,1\n\r\n"
                + "--b0undary--\r\n";
        HttpResponse<String> r = server().post("/orders/quote-file", "multipart/form-data; boundary=b0undary", body);
        assertEquals(200, r.statusCode(), why(r));
        assertTrue(r.body().contains("\"totalCents\":800") && r.body().contains("\"file\":\"order.csv\"")
                && r.body().contains("\"customer\":\"Ada\"") && r.body().contains("\"lines\":2"), why(r));
    }

    @Test
    void actuatorHealthIsUp() throws Exception {
        HttpResponse<String> r = server().get("/actuator/health");
        assertEquals(200, r.statusCode(), why(r));
        assertTrue(r.body().contains("\"status\":\"UP\""), why(r));
    }

    @Test
    void helloAndEchoForTheBenchmark() throws Exception {
        HttpResponse<String> hello = server().get("/");
        assertEquals("Hello, world!\n", hello.body(), why(hello));
        String k = "x".repeat(1024);
        HttpResponse<String> echo = server().post("/", "application/octet-stream", k);
        assertEquals(k, echo.body(), why(echo));
    }

    @Test
    void anExceptionThatEscapesIs500() throws Exception {
        HttpResponse<String> r = server().get("/orders/fail");
        assertEquals(500, r.statusCode(), why(r));
        assertTrue(!r.body().contains("database is down"), "no exception message reaches the client: " + why(r));
    }
}
