package dev.afterburn.runtime;

import com.fasterxml.jackson.core.JacksonException;
import com.fasterxml.jackson.core.JsonLocation;
import com.fasterxml.jackson.databind.JavaType;
import com.fasterxml.jackson.databind.JsonMappingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.ObjectReader;
import java.util.List;

/**
 * A typed JSON handler: decodes the request body with the user's own {@link ObjectMapper}
 * (modules, annotations, naming strategy), calls the function, and encodes its result with
 * the same mapper. Jackson is loaded only when a JSON handler is made.
 *
 * <p>A body that does not decode is the client's fault: it is answered {@code 400} with
 * the §8.1 body, type {@code bad_request}, whose message names the offending field and
 * position (PROTOCOL.md §8.1, §8.2) but never quotes Jackson's message, which may echo
 * request bytes.
 */
final class JsonHandler<I, O> implements Handler {
    private final ObjectMapper mapper;
    private final ObjectReader reader; // made once: it holds the type's resolved deserializer
    private final JavaType type;
    private final JsonRequestFunction<I, O> function;

    /**
     * {@code type} may be generic ({@code List<Order>}, from a TypeReference or the mapper's
     * TypeFactory); the decoded value is an {@code I} because the caller's
     * TypeReference&lt;I&gt; or Class&lt;I&gt; said so.
     */
    JsonHandler(ObjectMapper mapper, JavaType type, JsonRequestFunction<I, O> function) {
        this.mapper = mapper;
        this.reader = mapper.readerFor(type);
        this.type = type;
        this.function = function;
    }

    @Override
    public Response handle(Request request) throws Exception {
        I input;
        try {
            input = reader.readValue(request.body());
        } catch (JacksonException e) {
            BodyInputStream.FramingException framing = framingCause(e);
            if (framing != null) throw framing; // the library answers the framing error (§8.8)
            return badInput(request, e);
        }
        O output = function.apply(input, request);
        return Response.ok()
                .header("Content-Type", "application/json")
                .body(mapper.writeValueAsBytes(output));
    }

    private static BodyInputStream.FramingException framingCause(Throwable e) {
        for (Throwable t = e; t != null; t = t.getCause()) {
            if (t instanceof BodyInputStream.FramingException) return (BodyInputStream.FramingException) t;
        }
        return null;
    }

    private Response badInput(Request request, JacksonException e) {
        String message = describe(type, e);
        return Response.status(400)
                .header("Content-Type", "application/json")
                .header("AfterBurn-Error", ProtocolError.BAD_REQUEST)
                .body(ErrorBody.json(ProtocolError.BAD_REQUEST, message, request.requestId()));
    }

    /**
     * "the request body is not valid JSON for Order: field "items[1].qty", line 1, column 31".
     * Built from the path and location only.
     */
    static String describe(JavaType type, JacksonException e) {
        StringBuilder sb = new StringBuilder("the request body is not valid JSON for ").append(typeName(type));
        if (e instanceof JsonMappingException) {
            String path = path(((JsonMappingException) e).getPath());
            if (!path.isEmpty()) sb.append(": field \"").append(path).append('"');
        }
        JsonLocation at = e.getLocation();
        if (at != null && at.getLineNr() > 0) {
            sb.append(sb.indexOf(": ") < 0 ? ": " : ", ");
            sb.append("line ").append(at.getLineNr()).append(", column ").append(at.getColumnNr());
        } else if (sb.indexOf(": ") < 0) {
            sb.append(": the body is empty or ends early");
        }
        return sb.toString();
    }

    /** {@code Order}, {@code List<Order>}, {@code Map<String, List<Order>>}, {@code Order[]}: simple names only. */
    static String typeName(JavaType type) {
        if (type.isArrayType()) return typeName(type.getContentType()) + "[]";
        StringBuilder sb = new StringBuilder(type.getRawClass().getSimpleName());
        if (type.containedTypeCount() > 0) {
            sb.append('<');
            for (int i = 0; i < type.containedTypeCount(); i++) {
                if (i > 0) sb.append(", ");
                sb.append(typeName(type.containedType(i)));
            }
            sb.append('>');
        }
        return sb.toString();
    }

    private static String path(List<JsonMappingException.Reference> refs) {
        StringBuilder sb = new StringBuilder();
        for (JsonMappingException.Reference r : refs) {
            if (r.getFieldName() != null) {
                if (sb.length() > 0) sb.append('.');
                sb.append(r.getFieldName());
            } else if (r.getIndex() >= 0) {
                sb.append('[').append(r.getIndex()).append(']');
            }
        }
        return sb.toString();
    }
}
