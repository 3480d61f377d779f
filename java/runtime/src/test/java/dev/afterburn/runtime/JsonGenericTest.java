package dev.afterburn.runtime;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.core.type.TypeReference;
import com.fasterxml.jackson.databind.JavaType;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** serveJson's generic body types (TypeReference, JavaType) and the variant that sees the request. */
class JsonGenericTest {
    public record Item(String sku, int quantity) {}

    private static final ObjectMapper MAPPER = new ObjectMapper();

    private static JsonNode json(TestResponse r) throws Exception {
        return MAPPER.readTree(r.body());
    }

    @Test
    void aTypeReferenceDecodesAListOfRecords() throws Exception {
        Handler h = AfterBurn.jsonHandler(MAPPER, new TypeReference<List<Item>>() {},
                items -> items.stream().mapToInt(Item::quantity).sum());
        TestResponse r = TestRequest.post("/").body("[{\"sku\":\"a\",\"quantity\":2},{\"sku\":\"b\",\"quantity\":5}]").call(h);
        assertEquals(200, r.status(), r.toString());
        assertEquals("7", r.bodyText(), "each element is an Item, not a LinkedHashMap");
    }

    @Test
    void aJavaTypeBuiltAtRunTimeDecodesAMap() throws Exception {
        JavaType type = MAPPER.getTypeFactory().constructMapType(Map.class, String.class, Item.class);
        Handler h = AfterBurn.<Map<String, Item>, String>jsonHandler(MAPPER, type, (m, request) -> m.get("x").sku());
        TestResponse r = TestRequest.post("/").body("{\"x\":{\"sku\":\"tea\",\"quantity\":1}}").call(h);
        assertEquals(200, r.status(), r.toString());
        assertEquals("\"tea\"", r.bodyText());
    }

    @Test
    void aGenericTypeThatDoesNotDecodeIsNamedInThe400() throws Exception {
        Handler h = AfterBurn.jsonHandler(MAPPER, new TypeReference<List<Item>>() {}, items -> items.size());
        TestResponse r = TestRequest.post("/").requestId("rid-g").body("[{\"sku\":\"a\",\"quantity\":\"two\"}]").call(h);
        assertEquals(400, r.status());
        String message = json(r).get("message").asText();
        assertTrue(message.startsWith("the request body is not valid JSON for List<Item>: field \"[0].quantity\""), message);
        assertEquals("rid-g", json(r).get("request_id").asText());
    }

    @Test
    void theRequestVariantSeesIdDeadlineAndHeaders() throws Exception {
        Handler h = AfterBurn.jsonHandler(MAPPER, Item.class, (item, request) -> Map.of(
                "sku", item.sku(),
                "request_id", request.requestId(),
                "has_deadline", request.hasDeadline(),
                "deadline_ok", request.timeRemaining().compareTo(Duration.ofSeconds(4)) > 0
                        && request.timeRemaining().compareTo(Duration.ofSeconds(5)) <= 0,
                "tenant", request.headers().first("X-Tenant"),
                "query", request.queryParam("dry")));
        TestResponse r = TestRequest.post("/price?dry=1").requestId("rid-7").timeout(Duration.ofSeconds(5))
                .header("X-Tenant", "acme").body("{\"sku\":\"tea\",\"quantity\":3}").call(h);
        assertEquals(200, r.status(), r.toString());
        JsonNode out = json(r);
        assertEquals("tea", out.get("sku").asText());
        assertEquals("rid-7", out.get("request_id").asText());
        assertTrue(out.get("has_deadline").asBoolean());
        assertTrue(out.get("deadline_ok").asBoolean(), out.toString());
        assertEquals("acme", out.get("tenant").asText());
        assertEquals("1", out.get("query").asText());
    }

    @Test
    void theRequestVariantWithATypeReference() throws Exception {
        Handler h = AfterBurn.jsonHandler(MAPPER, new TypeReference<List<Integer>>() {},
                (numbers, request) -> request.method() + " " + numbers.stream().mapToInt(Integer::intValue).sum());
        TestResponse r = TestRequest.post("/").body("[1,2,3]").call(h);
        assertEquals("\"POST 6\"", r.bodyText());
    }

    @Test
    void theRequestVariantFailingIs500() throws Exception {
        Handler h = AfterBurn.jsonHandler(MAPPER, Item.class, (item, request) -> {
            throw new IllegalStateException("secret detail");
        });
        TestResponse r = TestRequest.post("/").body("{\"sku\":\"a\",\"quantity\":1}").call(h);
        assertEquals(500, r.status());
        assertEquals("handler_error", json(r).get("type").asText());
    }

    @Test
    void nullArgumentsAreRefusedByName() {
        JsonRequestFunction<Item, Item> f = (i, r) -> i;
        NullPointerException e = assertThrows(NullPointerException.class,
                () -> AfterBurn.jsonHandler(MAPPER, (JavaType) null, f));
        assertEquals("type", e.getMessage());
        e = assertThrows(NullPointerException.class, () -> AfterBurn.jsonHandler(null, Item.class, f));
        assertEquals("mapper", e.getMessage());
    }
}
