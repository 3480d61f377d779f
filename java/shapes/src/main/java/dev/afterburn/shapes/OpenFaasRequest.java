package dev.afterburn.shapes;

import com.openfaas.model.IRequest;
import dev.afterburn.runtime.Headers;
import dev.afterburn.runtime.Request;
import java.io.IOException;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;

/**
 * The {@link IRequest} an OpenFaaS {@code java11} handler is given, made of one AfterBurn
 * request as the template's entrypoint made it of a {@code com.sun.net.httpserver} exchange:
 *
 * <ul>
 *   <li>{@link #getBody()}: the body as UTF-8 text (for every method; the entrypoint read it
 *       for {@code POST} only);</li>
 *   <li>{@link #getHeaders()}: one value per name, the first, under the name as
 *       {@code com.sun.net.httpserver} spells it (first letter upper case, the rest lower:
 *       {@code Content-type}); lookups ignore case, so {@code getHeader("Content-Type")} and
 *       {@code getHeader("content-type")} find it too;</li>
 *   <li>{@link #getQueryRaw()}: the query as sent, null without a {@code ?};
 *       {@link #getQuery()}: each name's last value, decoded as a form is
 *       ({@code +} a space, UTF-8);</li>
 *   <li>{@link #getPathRaw()}: the path, percent-decoded as {@code URI.getPath()} does;
 *       {@link #getPath()}: its segments taken in pairs, {@code /users/7/orders} giving
 *       {@code users=7, orders=""}.</li>
 * </ul>
 *
 * <p>What the model's single-valued maps cannot say is here too, for a handler that casts to
 * this class: the method, the body's bytes, every value of every field and parameter.
 */
public final class OpenFaasRequest implements IRequest {
    private final Request request;
    private final byte[] body;
    private final Map<String, String> headers;
    private final Map<String, List<String>> headerValues;
    private final Map<String, String> query;
    private final String queryRaw;
    private final String pathRaw;
    private final Map<String, String> path;

    OpenFaasRequest(Request request) throws IOException {
        this.request = request;
        this.body = request.bodyBytes();
        Map<String, String> first = new TreeMap<>(String.CASE_INSENSITIVE_ORDER);
        Map<String, List<String>> all = new LinkedHashMap<>();
        for (Headers.Field f : request.headers()) {
            first.putIfAbsent(sunName(f.name()), f.value());
            all.computeIfAbsent(f.name().toLowerCase(Locale.ROOT), k -> new ArrayList<>()).add(f.value());
        }
        this.headers = Collections.unmodifiableMap(first);
        all.replaceAll((k, v) -> List.copyOf(v));
        this.headerValues = Collections.unmodifiableMap(all);
        this.queryRaw = request.target().indexOf('?') < 0 ? null : request.query();
        Map<String, String> last = new HashMap<>();
        request.queryParams().forEach((name, values) -> last.put(name, values.get(values.size() - 1)));
        this.query = Collections.unmodifiableMap(last);
        this.pathRaw = decodePath(request.path());
        this.path = Collections.unmodifiableMap(pairs(pathRaw));
    }

    /** {@code com.sun.net.httpserver.Headers}' spelling: the first character upper case, the rest lower. */
    static String sunName(String name) {
        if (name.isEmpty()) return name;
        return name.substring(0, 1).toUpperCase(Locale.ROOT) + name.substring(1).toLowerCase(Locale.ROOT);
    }

    private static String decodePath(String raw) {
        if (raw.indexOf('%') < 0) return raw;
        try {
            return URLDecoder.decode(raw.replace("+", "%2B"), StandardCharsets.UTF_8); // '+' is itself in a path
        } catch (IllegalArgumentException malformed) {
            return raw; // URI.getPath() would have refused the request; the raw path is the most honest answer
        }
    }

    private static Map<String, String> pairs(String path) {
        Map<String, String> m = new HashMap<>();
        if (path.length() <= 1) return m;
        String key = null;
        for (String segment : path.substring(1).split("/")) {
            if (key == null) {
                if (!segment.isEmpty()) key = segment;
            } else {
                m.put(key, segment);
                key = null;
            }
        }
        if (key != null) m.put(key, "");
        return m;
    }

    @Override
    public String getBody() {
        return new String(body, StandardCharsets.UTF_8);
    }

    @Override
    public Map<String, String> getHeaders() {
        return headers;
    }

    @Override
    public String getHeader(String name) {
        return name == null ? null : headers.get(name);
    }

    @Override
    public String getQueryRaw() {
        return queryRaw;
    }

    @Override
    public Map<String, String> getQuery() {
        return query;
    }

    @Override
    public String getPathRaw() {
        return pathRaw;
    }

    @Override
    public Map<String, String> getPath() {
        return path;
    }

    /** @return the request method, such as {@code GET} */
    public String getMethod() {
        return request.method();
    }

    /** @return the body's bytes, as sent (a copy) */
    public byte[] getBodyBytes() {
        return body.clone();
    }

    /** @return every field's every value, in order, under its lower-case name */
    public Map<String, List<String>> getHeaderValues() {
        return headerValues;
    }

    /** @return every query parameter's every value, decoded, in order of first appearance */
    public Map<String, List<String>> getQueryValues() {
        return request.queryParams();
    }

    /** @return the AfterBurn request: its id, deadline, cancellation and log */
    public Request getRequest() {
        return request;
    }

    @Override
    public String toString() {
        return "OpenFaasRequest[" + request.method() + " " + request.target() + "]";
    }
}
