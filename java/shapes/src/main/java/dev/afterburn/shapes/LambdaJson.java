package dev.afterburn.shapes;

import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.MapperFeature;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.json.JsonMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.afterburn.runtime.Headers;
import dev.afterburn.runtime.Request;
import dev.afterburn.runtime.Response;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * AWS Lambda's HTTP event, payload format 2.0, as JSON both ways (PROTOCOL.md §13,
 * {@code lambda-http}): the event a function URL or an API Gateway HTTP API makes of a request,
 * and the response they make of a function's result. Held to
 * {@code conformance/shapes/lambda-http.json}; the same rules as the Python library's.
 */
final class LambdaJson {
    private LambdaJson() {}

    /**
     * Events in, results out, configured as the Java runtime's serializer is
     * ({@code aws-lambda-java-serialization}'s JacksonFactory): unknown properties ignored, a
     * single value accepted as an array, null properties left out of results, property names
     * matched exactly.
     */
    static final ObjectMapper MAPPER = JsonMapper.builder()
            .disable(MapperFeature.ACCEPT_CASE_INSENSITIVE_PROPERTIES)
            .disable(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES)
            .enable(DeserializationFeature.ACCEPT_SINGLE_VALUE_AS_ARRAY)
            .enable(DeserializationFeature.ACCEPT_EMPTY_STRING_AS_NULL_OBJECT)
            .disable(SerializationFeature.FAIL_ON_EMPTY_BEANS)
            .defaultPropertyInclusion(JsonInclude.Value.construct(JsonInclude.Include.NON_NULL, JsonInclude.Include.USE_DEFAULTS))
            .build();

    /** Lambda's longest timeout: what a context says is left of a request without a deadline. */
    static final int NO_DEADLINE_MS = 900_000;

    private static final DateTimeFormatter TIME =
            DateTimeFormatter.ofPattern("dd/MMM/yyyy:HH:mm:ss Z", Locale.ROOT).withZone(ZoneOffset.UTC);

    /** §13: whether a body of this {@code Content-Type} is passed as text rather than base64. */
    static boolean isText(String contentType) {
        if (contentType == null) return false;
        int semi = contentType.indexOf(';');
        String media = (semi < 0 ? contentType : contentType.substring(0, semi)).trim().toLowerCase(Locale.ROOT);
        return media.startsWith("text/")
                || media.equals("application/json") || media.equals("application/xml")
                || media.equals("application/x-www-form-urlencoded") || media.equals("application/javascript")
                || (media.startsWith("application/") && (media.endsWith("+json") || media.endsWith("+xml")));
    }

    /**
     * The payload 2.0 event of a request: {@code headers} one lower-case name per field,
     * repeated values joined with {@code ,}; {@code cookies} the {@code Cookie} fields split at
     * {@code ;} (and no {@code cookie} header); {@code rawQueryString} as sent,
     * {@code queryStringParameters} decoded (repeated names joined with {@code ,}; absent
     * without a query); {@code requestContext.requestId} the request id (§5.1) and
     * {@code http.sourceIp} the first {@code X-Forwarded-For} address, else {@code 127.0.0.1}
     * (the watchdog, the worker's only peer); {@code body} text for the types of §13 (that
     * decode as UTF-8), base64 with {@code isBase64Encoded} otherwise, absent when empty.
     */
    static ObjectNode event(Request request, byte[] body) {
        JsonNodeFactory f = JsonNodeFactory.instance;
        Map<String, String> headers = new LinkedHashMap<>();
        ArrayNode cookies = f.arrayNode();
        for (Headers.Field field : request.headers()) {
            String name = field.name().toLowerCase(Locale.ROOT);
            if (name.equals("cookie")) {
                for (String c : field.value().split(";")) {
                    if (!c.isBlank()) cookies.add(c.strip());
                }
            } else {
                headers.merge(name, field.value(), (a, b) -> a + "," + b);
            }
        }
        long now = System.currentTimeMillis();
        String host = headers.getOrDefault("host", "");
        String forwarded = headers.getOrDefault("x-forwarded-for", "").split(",", 2)[0].strip();

        ObjectNode ev = f.objectNode();
        ev.put("version", "2.0");
        ev.put("routeKey", "$default");
        ev.put("rawPath", request.path());
        ev.put("rawQueryString", request.query());
        if (!cookies.isEmpty()) ev.set("cookies", cookies);
        ObjectNode h = ev.putObject("headers");
        headers.forEach(h::put);
        if (!request.query().isEmpty()) {
            ObjectNode q = ev.putObject("queryStringParameters");
            for (Map.Entry<String, List<String>> e : request.queryParams().entrySet()) {
                q.put(e.getKey(), String.join(",", e.getValue()));
            }
        }
        ObjectNode ctx = ev.putObject("requestContext");
        ctx.put("accountId", "anonymous");
        ctx.put("apiId", "afterburn");
        ctx.put("domainName", host);
        ctx.put("domainPrefix", host.split("\\.", 2)[0]);
        ObjectNode http = ctx.putObject("http");
        http.put("method", request.method());
        http.put("path", request.path());
        http.put("protocol", "HTTP/1.1");
        http.put("sourceIp", forwarded.isEmpty() ? "127.0.0.1" : forwarded);
        http.put("userAgent", headers.getOrDefault("user-agent", ""));
        ctx.put("requestId", request.requestId());
        ctx.put("routeKey", "$default");
        ctx.put("stage", "$default");
        ctx.put("time", TIME.format(Instant.ofEpochMilli(now)));
        ctx.put("timeEpoch", now);
        boolean encoded = false;
        if (body.length > 0) {
            String text = isText(headers.get("content-type")) ? utf8(body) : null;
            if (text == null) {
                text = Base64.getEncoder().encodeToString(body);
                encoded = true;
            }
            ev.put("body", text);
        }
        ev.put("isBase64Encoded", encoded);
        return ev;
    }

    /** The body as UTF-8 text, or null when it is not UTF-8 (then it goes as base64: no byte lost). */
    private static String utf8(byte[] body) {
        try {
            return StandardCharsets.UTF_8.newDecoder()
                    .onMalformedInput(CodingErrorAction.REPORT)
                    .onUnmappableCharacter(CodingErrorAction.REPORT)
                    .decode(ByteBuffer.wrap(body)).toString();
        } catch (CharacterCodingException e) {
            return null;
        }
    }

    /**
     * A function URL's reading of a result: an object with {@code statusCode} is the response,
     * with {@code headers} (string values; numbers are made strings), {@code cookies} (each a
     * {@code Set-Cookie}) and {@code body} (a string, base64-decoded when
     * {@code isBase64Encoded}). Anything else (an object without {@code statusCode}, a string,
     * an array, a number, null) is a {@code 200 application/json} body: the result as compact
     * JSON. A result that breaks these rules is the handler's error.
     *
     * @throws Errors.ResultError for a {@code statusCode} that is not an integer from 100 to 599
     *     (1xx: from 200), headers or cookies of the wrong type, a body that is not a string, or
     *     base64 that does not decode
     */
    static Response response(JsonNode result) throws IOException {
        if (result == null || result.isMissingNode()) result = JsonNodeFactory.instance.nullNode();
        if (!result.isObject() || !result.has("statusCode")) {
            return Response.ok().header("Content-Type", "application/json").body(MAPPER.writeValueAsBytes(result));
        }
        JsonNode code = result.get("statusCode");
        if (!code.isIntegralNumber() || !code.canConvertToInt() || code.intValue() < 100 || code.intValue() > 599) {
            throw new Errors.ResultError("lambda: statusCode " + code + " is not an integer from 100 to 599");
        }
        if (code.intValue() < 200) {
            throw new Errors.ResultError("lambda: statusCode " + code + " is informational, not a final response");
        }
        Response r = Response.status(code.intValue());
        JsonNode headers = result.path("headers");
        if (headers.isObject()) {
            for (Map.Entry<String, JsonNode> e : headers.properties()) {
                JsonNode v = e.getValue();
                if (v.isNull()) continue;
                if (!v.isTextual() && !v.isNumber()) {
                    throw new Errors.ResultError("lambda: the value of header \"" + e.getKey() + "\" is " + v.getNodeType() + ", not a string");
                }
                r.header(e.getKey(), v.asText());
            }
        } else if (!headers.isMissingNode() && !headers.isNull()) {
            throw new Errors.ResultError("lambda: headers is " + headers.getNodeType() + ", not an object");
        }
        JsonNode cookies = result.path("cookies");
        if (cookies.isArray()) {
            for (JsonNode c : cookies) {
                if (!c.isTextual()) throw new Errors.ResultError("lambda: cookies is not a list of strings");
                r.header("Set-Cookie", c.textValue());
            }
        } else if (!cookies.isMissingNode() && !cookies.isNull()) {
            throw new Errors.ResultError("lambda: cookies is " + cookies.getNodeType() + ", not a list of strings");
        }
        JsonNode body = result.path("body");
        if (body.isMissingNode() || body.isNull()) return r.body(new byte[0]);
        if (!body.isTextual()) throw new Errors.ResultError("lambda: body is " + body.getNodeType() + ", not a string");
        if (result.path("isBase64Encoded").asBoolean(false)) {
            try {
                return r.body(Base64.getDecoder().decode(body.textValue()));
            } catch (IllegalArgumentException e) {
                throw new Errors.ResultError("lambda: isBase64Encoded, but the body is not base64", e);
            }
        }
        return r.body(body.textValue().getBytes(StandardCharsets.UTF_8));
    }
}
