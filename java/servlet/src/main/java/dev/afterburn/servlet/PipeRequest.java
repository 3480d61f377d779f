package dev.afterburn.servlet;

import dev.afterburn.runtime.Request;
import jakarta.servlet.AsyncContext;
import jakarta.servlet.DispatcherType;
import jakarta.servlet.RequestDispatcher;
import jakarta.servlet.ServletContext;
import jakarta.servlet.ServletException;
import jakarta.servlet.ServletInputStream;
import jakarta.servlet.ServletRequest;
import jakarta.servlet.ServletRequestAttributeEvent;
import jakarta.servlet.ServletRequestAttributeListener;
import jakarta.servlet.ServletResponse;
import jakarta.servlet.http.Cookie;
import jakarta.servlet.http.HttpServletMapping;
import jakarta.servlet.http.HttpServletResponse;
import jakarta.servlet.http.HttpSession;
import jakarta.servlet.http.HttpUpgradeHandler;
import jakarta.servlet.http.Part;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.UnsupportedEncodingException;
import java.nio.charset.Charset;
import java.nio.charset.IllegalCharsetNameException;
import java.nio.charset.StandardCharsets;
import java.nio.charset.UnsupportedCharsetException;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.Enumeration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The request a servlet reads (Servlet 6 §3), made from the runtime's {@link Request}. The
 * path methods follow the current dispatch (a forward or error dispatch changes them and puts
 * them back); parameters are the query's and, for a POST form, the body's (§3.1.1). What the
 * request's head alone answers (fields, cookies, locales, the connection) is {@link RequestHead}'s.
 */
final class PipeRequest extends RequestHead {
    private static final Object NULL = new Object(); // attribute maps hold no nulls

    private final Exchange exchange;
    private final PipeContext context;
    private final Map<String, Object> attributes = new ConcurrentHashMap<>();
    private String charset; // setCharacterEncoding
    private Map<String, String[]> parameters; // parsed on first use
    private PipeInput input;
    private BufferedReader reader;
    private boolean streamUsed;
    private Sessions.Session session;
    private String requestedSessionId;
    private boolean requestedSessionIdRead;

    // The current dispatch (Servlet 6 §9.4, §10.9): set by the exchange and by dispatchers.
    String requestUri;
    String queryString;
    String servletPath = "";
    String pathInfo;
    HttpServletMapping mapping;
    DispatcherType dispatcherType = DispatcherType.REQUEST;
    boolean asyncSupported;

    PipeRequest(Exchange exchange, Request request, PipeContext context) {
        super(request);
        this.exchange = exchange;
        this.context = context;
        this.requestUri = request.path();
        String q = request.query();
        this.queryString = request.target().indexOf('?') < 0 ? null : q;
    }

    Request runtimeRequest() {
        return request;
    }

    Exchange exchange() {
        return exchange;
    }

    /** Replaces the parameters during a forward with a query (§9.1.1), or restores them. */
    Map<String, String[]> parameters() {
        if (parameters == null) parameters = Forms.parameters(this);
        return parameters;
    }

    void parameters(Map<String, String[]> p) {
        this.parameters = p;
    }

    @Override
    public Object getAttribute(String name) {
        Object v = attributes.get(name);
        return v == NULL ? null : v;
    }

    @Override
    public Enumeration<String> getAttributeNames() {
        return Collections.enumeration(new ArrayList<>(attributes.keySet()));
    }

    @Override
    public void setAttribute(String name, Object o) {
        if (name == null) throw new NullPointerException("name");
        if (o == null) {
            removeAttribute(name);
            return;
        }
        Object old = attributes.put(name, o);
        for (ServletRequestAttributeListener l : context.requestAttributeListeners) {
            if (old == null) l.attributeAdded(new ServletRequestAttributeEvent(context, this, name, o));
            else l.attributeReplaced(new ServletRequestAttributeEvent(context, this, name, old));
        }
    }

    @Override
    public void removeAttribute(String name) {
        Object old = attributes.remove(name);
        if (old == null) return;
        for (ServletRequestAttributeListener l : context.requestAttributeListeners) {
            l.attributeRemoved(new ServletRequestAttributeEvent(context, this, name, old));
        }
    }

    /** Sets an attribute without telling listeners (the container's own, at the start). */
    void attribute(String name, Object value) {
        if (value == null) attributes.remove(name);
        else attributes.put(name, value);
    }

    @Override
    public String getCharacterEncoding() {
        if (charset != null) return charset;
        String fromType = charsetOf(getContentType());
        if (fromType != null) return fromType;
        return context.getRequestCharacterEncoding();
    }

    /** The charset to decode the body with: the request's, else ISO-8859-1 (Servlet 6 §3.12). */
    Charset bodyCharset() throws UnsupportedEncodingException {
        String cs = getCharacterEncoding();
        if (cs == null) return StandardCharsets.ISO_8859_1;
        try {
            return Charset.forName(cs);
        } catch (IllegalCharsetNameException | UnsupportedCharsetException e) {
            throw new UnsupportedEncodingException("afterburn-servlet: the request's charset \"" + cs + "\" is not supported");
        }
    }

    @Override
    public void setCharacterEncoding(String env) throws UnsupportedEncodingException {
        if (reader != null || parameters != null) return; // too late (§3.12): ignored, as Tomcat does
        try {
            Charset.forName(env);
        } catch (IllegalCharsetNameException | UnsupportedCharsetException e) {
            throw new UnsupportedEncodingException("afterburn-servlet: unsupported charset \"" + env + "\"");
        }
        charset = env;
    }

    PipeInput input() {
        if (input == null) input = new PipeInput(request.body());
        return input;
    }

    @Override
    public ServletInputStream getInputStream() throws IOException {
        if (reader != null) throw new IllegalStateException("afterburn-servlet: getReader() was called before getInputStream()");
        streamUsed = true;
        return input();
    }

    @Override
    public String getParameter(String name) {
        String[] v = parameters().get(name);
        return v == null ? null : v[0];
    }

    @Override
    public Enumeration<String> getParameterNames() {
        return Collections.enumeration(parameters().keySet());
    }

    @Override
    public String[] getParameterValues(String name) {
        String[] v = parameters().get(name);
        return v == null ? null : v.clone();
    }

    @Override
    public Map<String, String[]> getParameterMap() {
        return Collections.unmodifiableMap(parameters());
    }

    @Override
    public BufferedReader getReader() throws IOException {
        if (reader != null) return reader;
        if (streamUsed) throw new IllegalStateException("afterburn-servlet: getInputStream() was called before getReader()");
        reader = new BufferedReader(new InputStreamReader(input(), bodyCharset()));
        return reader;
    }

    @Override
    public RequestDispatcher getRequestDispatcher(String path) {
        if (path == null) return null;
        if (!path.startsWith("/")) {
            String base = servletPath + (pathInfo == null ? "" : pathInfo);
            path = base.substring(0, base.lastIndexOf('/') + 1) + path;
        }
        return context.getRequestDispatcher(path);
    }

    @Override
    public ServletContext getServletContext() {
        return context;
    }

    @Override
    public AsyncContext startAsync() throws IllegalStateException {
        return startAsync(this, exchange.response());
    }

    @Override
    public AsyncContext startAsync(ServletRequest servletRequest, ServletResponse servletResponse) throws IllegalStateException {
        if (!asyncSupported) {
            throw new IllegalStateException("afterburn-servlet: a filter or servlet of this chain does not support async (setAsyncSupported(true), Servlet 6 §2.3.3.3)");
        }
        return exchange.startAsync(servletRequest, servletResponse);
    }

    @Override
    public boolean isAsyncStarted() {
        return exchange.asyncStarted();
    }

    @Override
    public boolean isAsyncSupported() {
        return asyncSupported;
    }

    @Override
    public AsyncContext getAsyncContext() {
        AsyncContext a = exchange.asyncContext();
        if (a == null) throw new IllegalStateException("afterburn-servlet: the request is not in async mode");
        return a;
    }

    @Override
    public DispatcherType getDispatcherType() {
        return dispatcherType;
    }

    @Override
    public HttpServletMapping getHttpServletMapping() {
        return mapping;
    }

    @Override
    public String getPathInfo() {
        return pathInfo;
    }

    @Override
    public String getPathTranslated() {
        return null;
    }

    @Override
    public String getContextPath() {
        return context.getContextPath();
    }

    @Override
    public String getQueryString() {
        return queryString;
    }

    @Override
    public String getRequestedSessionId() {
        if (!requestedSessionIdRead) {
            requestedSessionIdRead = true;
            String name = context.sessions.cookieConfig.getName();
            Cookie[] cs = getCookies();
            if (cs != null) {
                for (Cookie c : cs) {
                    if (c.getName().equals(name)) {
                        requestedSessionId = c.getValue();
                        break;
                    }
                }
            }
        }
        return requestedSessionId;
    }

    @Override
    public String getRequestURI() {
        return requestUri;
    }

    @Override
    public StringBuffer getRequestURL() {
        StringBuffer sb = new StringBuffer("http://").append(getServerName());
        int port = getServerPort();
        if (port != 80) sb.append(':').append(port);
        return sb.append(getRequestURI());
    }

    @Override
    public String getServletPath() {
        return servletPath;
    }

    @Override
    public HttpSession getSession(boolean create) {
        if (session != null && session.valid()) return session;
        session = context.sessions.find(getRequestedSessionId());
        if (session != null) {
            session.access();
            return session;
        }
        if (!create) return null;
        if (exchange.response().isCommitted()) {
            throw new IllegalStateException("afterburn-servlet: a session cannot be created after the response was committed (its cookie would be lost)");
        }
        session = context.sessions.create();
        exchange.response().addHeader("Set-Cookie", context.sessions.cookieConfig.setCookie(session.id, context.getContextPath()));
        return session;
    }

    @Override
    public HttpSession getSession() {
        return getSession(true);
    }

    @Override
    public String changeSessionId() {
        HttpSession s = getSession(false);
        if (s == null) throw new IllegalStateException("afterburn-servlet: changeSessionId without a session");
        String id = context.sessions.changeId((Sessions.Session) s);
        HttpServletResponse resp = exchange.response();
        resp.addHeader("Set-Cookie", context.sessions.cookieConfig.setCookie(id, context.getContextPath()));
        return id;
    }

    @Override
    public boolean isRequestedSessionIdValid() {
        String id = getRequestedSessionId();
        return id != null && context.sessions.find(id) != null;
    }

    @Override
    public boolean isRequestedSessionIdFromCookie() {
        return getRequestedSessionId() != null;
    }

    @Override
    public boolean isRequestedSessionIdFromURL() {
        return false;
    }

    private List<Part> parts; // parsed once

    /**
     * The parts of a {@code multipart/form-data} body (Servlet 6 §3.2), parsed once, within the
     * limits of the servlet's multipart config; a servlet without one is refused, as §3.2 says.
     */
    @Override
    public Collection<Part> getParts() throws IOException, ServletException {
        if (parts != null) return parts;
        if (!Multipart.isMultipart(getContentType())) {
            throw new ServletException("afterburn-servlet: getParts on a request that is not multipart/form-data (Content-Type " + getContentType() + ")");
        }
        jakarta.servlet.MultipartConfigElement config = multipartConfig();
        if (config == null) {
            throw new IllegalStateException("afterburn-servlet: the servlet " + (mapping == null ? "?" : mapping.getServletName())
                    + " has no multipart config (setMultipartConfig, or @MultipartConfig)");
        }
        parts = List.copyOf(Multipart.parse(input(), getContentType(), config, bodyCharset()));
        return parts;
    }

    /** The multipart config of the servlet this dispatch is mapped to, or null. */
    jakarta.servlet.MultipartConfigElement multipartConfig() {
        if (mapping instanceof Mapper.Match) return ((Mapper.Match) mapping).entry().multipart;
        return null;
    }

    @Override
    public Part getPart(String name) throws IOException, ServletException {
        for (Part p : getParts()) if (p.getName().equals(name)) return p;
        return null;
    }

    @Override
    public <T extends HttpUpgradeHandler> T upgrade(Class<T> handlerClass) throws IOException, ServletException {
        throw new ServletException("afterburn-servlet: an HTTP upgrade cannot cross the watchdog (it drops Upgrade, PROTOCOL.md §5.4)");
    }

    @Override
    public boolean isTrailerFieldsReady() {
        return input != null && input.isFinished() || getContentLengthLong() >= 0;
    }

    @Override
    public String toString() {
        return "PipeRequest[" + getMethod() + " " + request.target() + ", request " + request.requestId() + "]";
    }
}
