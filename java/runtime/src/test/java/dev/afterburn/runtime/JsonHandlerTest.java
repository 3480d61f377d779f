package dev.afterburn.runtime;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.annotation.JsonProperty;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.PropertyNamingStrategies;
import java.util.List;
import org.junit.jupiter.api.Test;

/** Typed JSON handlers with the user's own ObjectMapper, called through the test helper. */
class JsonHandlerTest {
    public record LineItem(String productCode, int quantity) {}

    public record Order(String customerName, List<LineItem> lineItems) {}

    public record Quote(String customerName, long totalCents, @JsonProperty("currency_iso") String currency) {}

    private static final ObjectMapper SNAKE = new ObjectMapper()
            .setPropertyNamingStrategy(PropertyNamingStrategies.SNAKE_CASE);

    private static Quote price(Order o) {
        long cents = 0;
        for (LineItem li : o.lineItems()) cents += 250L * li.quantity();
        return new Quote(o.customerName(), cents, "EUR");
    }

    @Test
    void snakeCaseMapperRoundTripsBothWays() throws Exception {
        TestResponse r = TestRequest.post("/quote")
                .header("Content-Type", "application/json")
                .body("{\"customer_name\":\"Ada\",\"line_items\":[{\"product_code\":\"tea\",\"quantity\":2},"
                        + "{\"product_code\":\"cake\",\"quantity\":1}]}")
                .call(AfterBurn.jsonHandler(SNAKE, Order.class, JsonHandlerTest::price));
        assertEquals(200, r.status(), r.toString());
        assertEquals("application/json", r.headers().first("content-type"));
        JsonNode out = new ObjectMapper().readTree(r.body());
        assertEquals("Ada", out.get("customer_name").asText());
        assertEquals(750, out.get("total_cents").asLong());
        assertEquals("EUR", out.get("currency_iso").asText(), "annotations win over the naming strategy");
        assertTrue(r.complete());
    }

    @Test
    void theDefaultMapperUsesJavaNames() throws Exception {
        TestResponse r = TestRequest.post("/")
                .body("{\"customerName\":\"Bo\",\"lineItems\":[]}")
                .call(AfterBurn.jsonHandler(new ObjectMapper(), Order.class, JsonHandlerTest::price));
        assertEquals(200, r.status(), r.toString());
        assertEquals("Bo", new ObjectMapper().readTree(r.body()).get("customerName").asText());
    }

    @Test
    void malformedJsonIs400BadRequestNamingThePosition() throws Exception {
        TestResponse r = TestRequest.post("/").requestId("rid-j")
                .body("{\"customer_name\": \"Ada\", oops}")
                .call(AfterBurn.jsonHandler(SNAKE, Order.class, JsonHandlerTest::price));
        assertEquals(400, r.status());
        assertEquals("bad_request", r.headers().first("afterburn-error"));
        JsonNode err = new ObjectMapper().readTree(r.body());
        assertEquals("bad_request", err.get("type").asText());
        assertEquals("rid-j", err.get("request_id").asText());
        assertEquals("the request body is not valid JSON for Order: line 1, column 26", err.get("message").asText());
        assertFalse(err.get("message").asText().contains("oops"), "the message never echoes request bytes");
    }

    @Test
    void wrongTypeIs400NamingTheField() throws Exception {
        TestResponse r = TestRequest.post("/")
                .body("{\"customer_name\":\"Ada\",\"line_items\":[{\"product_code\":\"tea\",\"quantity\":\"many\"}]}")
                .call(AfterBurn.jsonHandler(SNAKE, Order.class, JsonHandlerTest::price));
        assertEquals(400, r.status());
        String message = new ObjectMapper().readTree(r.body()).get("message").asText();
        assertTrue(message.startsWith("the request body is not valid JSON for Order: field \"line_items[0].quantity\", line 1, column "),
                message);
        assertFalse(message.contains("many"));
    }

    @Test
    void emptyBodyIs400() throws Exception {
        TestResponse r = TestRequest.post("/").call(AfterBurn.jsonHandler(SNAKE, Order.class, JsonHandlerTest::price));
        assertEquals(400, r.status());
        assertEquals("bad_request", new ObjectMapper().readTree(r.body()).get("type").asText());
    }

    @Test
    void aFailingFunctionIs500HandlerError() throws Exception {
        TestResponse r = TestRequest.post("/").body("{\"customer_name\":\"Ada\",\"line_items\":[]}")
                .call(AfterBurn.jsonHandler(SNAKE, Order.class, o -> {
                    throw new IllegalStateException("no prices today");
                }));
        assertEquals(500, r.status());
        assertEquals("handler_error", new ObjectMapper().readTree(r.body()).get("type").asText());
        assertFalse(r.bodyText().contains("no prices"));
    }
}
