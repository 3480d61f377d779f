package dev.afterburn.servlet;

import dev.afterburn.runtime.Headers;
import dev.afterburn.runtime.Request;
import jakarta.servlet.ServletConnection;
import jakarta.servlet.ServletException;
import jakarta.servlet.http.Cookie;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.security.Principal;
import java.time.ZonedDateTime;
import java.time.format.DateTimeFormatter;
import java.time.format.DateTimeParseException;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Enumeration;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * What a {@link PipeRequest} answers from the request's head alone: its method, header fields,
 * cookies, locales, content type and length, trailers, and what a pipe answers for a connection
 * it does not have (addresses, ports, scheme: PROTOCOL.md §4.2) or a login the container does
 * not do. The dispatch, the body and parameters, attributes and sessions are {@link PipeRequest}'s.
 */
abstract sealed class RequestHead implements HttpServletRequest permits PipeRequest {
    final Request request;
    private Cookie[] cookies;

    RequestHead(Request request) {
        this.request = request;
    }

    Headers headersOfRequest() {
        return request.headers();
    }

    static String charsetOf(String contentType) {
        if (contentType == null) return null;
        for (String param : contentType.split(";")) {
            int eq = param.indexOf('=');
            if (eq > 0 && param.substring(0, eq).strip().equalsIgnoreCase("charset")) {
                return param.substring(eq + 1).strip().replace("\"", "");
            }
        }
        return null;
    }

    @Override
    public int getContentLength() {
        long n = getContentLengthLong();
        return n > Integer.MAX_VALUE ? -1 : (int) n;
    }

    @Override
    public long getContentLengthLong() {
        String v = request.headers().first("Content-Length");
        if (v == null) return -1;
        try {
            return Long.parseLong(v);
        } catch (NumberFormatException e) {
            return -1; // the runtime refused a malformed one already (§4.3)
        }
    }

    @Override
    public String getContentType() {
        return request.headers().first("Content-Type");
    }

    @Override
    public String getProtocol() {
        return "HTTP/1.1"; // the pipe speaks HTTP/1.1 whatever the client spoke to the watchdog (§4.1)
    }

    @Override
    public String getScheme() {
        return "http";
    }

    /** The Host field's host (§3.4 of the Servlet spec: the Host header first). */
    @Override
    public String getServerName() {
        String host = request.headers().first("Host");
        if (host == null || host.isEmpty()) return "localhost";
        if (host.startsWith("[")) {
            int end = host.indexOf(']');
            return end < 0 ? host : host.substring(0, end + 1);
        }
        int colon = host.indexOf(':');
        return colon < 0 ? host : host.substring(0, colon);
    }

    @Override
    public int getServerPort() {
        String host = request.headers().first("Host");
        if (host != null) {
            int colon = host.lastIndexOf(':');
            if (colon > host.lastIndexOf(']')) {
                try {
                    return Integer.parseInt(host.substring(colon + 1));
                } catch (NumberFormatException e) {
                    return 80;
                }
            }
        }
        return 80;
    }

    /**
     * The watchdog is the peer of the pipe and forwards no client address (PROTOCOL.md §4.2):
     * the answer is the loopback address, as a server behind a local proxy sees. Use
     * {@code X-Forwarded-For} from a proxy you trust (README, "What does not fit a pipe").
     */
    @Override
    public String getRemoteAddr() {
        return "127.0.0.1";
    }

    @Override
    public String getRemoteHost() {
        return "127.0.0.1";
    }

    @Override
    public Locale getLocale() {
        List<Locale> l = locales();
        return l.isEmpty() ? Locale.getDefault() : l.get(0);
    }

    @Override
    public Enumeration<Locale> getLocales() {
        List<Locale> l = locales();
        return Collections.enumeration(l.isEmpty() ? List.of(Locale.getDefault()) : l);
    }

    /** Accept-Language's ranges by quality, highest first (RFC 9110 §12.5.4); q=0 and * are dropped. */
    private List<Locale> locales() {
        List<String> values = request.headers().all("Accept-Language");
        if (values.isEmpty()) return List.of();
        try {
            List<Locale.LanguageRange> ranges = Locale.LanguageRange.parse(String.join(",", values));
            List<Locale> out = new ArrayList<>();
            for (Locale.LanguageRange r : ranges) {
                if (r.getWeight() > 0 && !r.getRange().equals("*")) out.add(Locale.forLanguageTag(r.getRange()));
            }
            return out;
        } catch (IllegalArgumentException e) {
            return List.of();
        }
    }

    @Override
    public boolean isSecure() {
        return false;
    }

    @Override
    public int getRemotePort() {
        return 0;
    }

    @Override
    public String getLocalName() {
        return "localhost";
    }

    @Override
    public String getLocalAddr() {
        return "127.0.0.1";
    }

    @Override
    public int getLocalPort() {
        return 0; // no socket: the worker listens on no port
    }

    /** The watchdog's request id (PROTOCOL.md §5.1). */
    @Override
    public String getRequestId() {
        return request.requestId();
    }

    @Override
    public String getProtocolRequestId() {
        return ""; // HTTP/1.1 has no request id of its own
    }

    @Override
    public ServletConnection getServletConnection() {
        return Exchange.CONNECTION;
    }

    @Override
    public String getAuthType() {
        return null;
    }

    @Override
    public Cookie[] getCookies() {
        if (cookies == null) cookies = Cookies.parse(request.headers().all("Cookie"));
        return cookies.length == 0 ? null : cookies.clone();
    }

    private static final DateTimeFormatter[] DATES = {
        DateTimeFormatter.RFC_1123_DATE_TIME,
        DateTimeFormatter.ofPattern("EEEE, dd-MMM-yy HH:mm:ss zzz", Locale.US),
        DateTimeFormatter.ofPattern("EEE MMM d HH:mm:ss yyyy", Locale.US).withZone(java.time.ZoneOffset.UTC),
    };

    @Override
    public long getDateHeader(String name) {
        String v = getHeader(name);
        if (v == null) return -1;
        for (DateTimeFormatter f : DATES) {
            try {
                return ZonedDateTime.parse(v.strip(), f).toInstant().toEpochMilli();
            } catch (DateTimeParseException e) {
                // the next format
            }
        }
        throw new IllegalArgumentException("afterburn-servlet: the " + name + " field is not an HTTP date: \"" + v + "\"");
    }

    @Override
    public String getHeader(String name) {
        return request.headers().first(name);
    }

    @Override
    public Enumeration<String> getHeaders(String name) {
        return Collections.enumeration(request.headers().all(name));
    }

    @Override
    public Enumeration<String> getHeaderNames() {
        LinkedHashSet<String> names = new LinkedHashSet<>();
        Map<String, Boolean> seen = new LinkedHashMap<>();
        for (Headers.Field f : request.headers()) {
            if (seen.putIfAbsent(f.name().toLowerCase(Locale.ROOT), true) == null) names.add(f.name());
        }
        return Collections.enumeration(names);
    }

    @Override
    public int getIntHeader(String name) {
        String v = getHeader(name);
        return v == null ? -1 : Integer.parseInt(v.strip()); // NumberFormatException, as the spec says
    }

    @Override
    public String getMethod() {
        return request.method();
    }

    @Override
    public String getRemoteUser() {
        return null;
    }

    @Override
    public boolean isUserInRole(String role) {
        return false;
    }

    @Override
    public Principal getUserPrincipal() {
        return null;
    }

    @Override
    public boolean authenticate(HttpServletResponse response) throws IOException, ServletException {
        // No container authentication: the application's filters (Spring Security) do it.
        response.sendError(HttpServletResponse.SC_UNAUTHORIZED);
        return false;
    }

    @Override
    public void login(String username, String password) throws ServletException {
        throw new ServletException("afterburn-servlet: there is no container login; authenticate in a filter (README)");
    }

    @Override
    public void logout() throws ServletException {
        // nothing was logged in by the container
    }

    @Override
    public Map<String, String> getTrailerFields() {
        Map<String, String> out = new LinkedHashMap<>();
        for (Headers.Field f : request.trailers()) {
            out.merge(f.name().toLowerCase(Locale.ROOT), f.value(), (a, b) -> a + "," + b);
        }
        return out;
    }
}
