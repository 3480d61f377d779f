package dev.afterburn.servlet;

import jakarta.servlet.RequestDispatcher;
import jakarta.servlet.Servlet;
import jakarta.servlet.ServletContext;
import jakarta.servlet.ServletContextAttributeEvent;
import jakarta.servlet.ServletContextAttributeListener;
import jakarta.servlet.ServletContextEvent;
import jakarta.servlet.ServletContextListener;
import jakarta.servlet.ServletException;
import jakarta.servlet.SessionCookieConfig;
import jakarta.servlet.SessionTrackingMode;
import jakarta.servlet.descriptor.JspConfigDescriptor;
import java.io.InputStream;
import java.net.MalformedURLException;
import java.net.URL;
import java.util.ArrayList;
import java.util.Collections;
import java.util.EnumSet;
import java.util.Enumeration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The one {@link ServletContext} of a {@link ServletContainer}: mappings, attributes, init
 * parameters, error pages, MIME types, the session store and the context's start and stop;
 * the registrations of servlets, filters and listeners are {@link ContextRegistry}'s. Registration is open until
 * {@link #start}, as in any container (Servlet 6 §4.4: "IllegalStateException if this
 * ServletContext has already been initialized").
 */
final class PipeContext extends ContextRegistry {
    static final String SERVER_INFO = "AfterBurn-Servlet/0.1.0";

    private final String contextPath;
    final Mapper mapper = new Mapper();
    private final Map<String, Object> attributes = new ConcurrentHashMap<>();
    private final Map<String, String> initParameters = new ConcurrentHashMap<>();
    final Map<Integer, String> statusErrorPages = new ConcurrentHashMap<>();
    final Map<Class<? extends Throwable>, String> exceptionErrorPages = new ConcurrentHashMap<>();
    volatile String globalErrorPage;
    private final Map<String, String> mimeTypes = new ConcurrentHashMap<>();
    final Sessions sessions;
    volatile boolean eagerServlets; // initialise every servlet at start, load-on-startup or not
    final java.util.concurrent.atomic.AtomicInteger active = new java.util.concurrent.atomic.AtomicInteger();
    private volatile String requestCharacterEncoding;
    private volatile String responseCharacterEncoding;
    private volatile String displayName = "afterburn";

    PipeContext(String contextPath, ClassLoader classLoader) {
        super(classLoader);
        if (!contextPath.isEmpty() && (!contextPath.startsWith("/") || contextPath.endsWith("/"))) {
            throw new IllegalArgumentException("afterburn-servlet: a context path is empty or starts and does not end with /, got \"" + contextPath + "\"");
        }
        this.contextPath = contextPath;
        this.sessions = new Sessions(this);
        for (String[] m : new String[][] {{"html", "text/html"}, {"htm", "text/html"}, {"txt", "text/plain"},
                {"css", "text/css"}, {"js", "text/javascript"}, {"json", "application/json"}, {"xml", "application/xml"},
                {"png", "image/png"}, {"jpg", "image/jpeg"}, {"jpeg", "image/jpeg"}, {"gif", "image/gif"},
                {"svg", "image/svg+xml"}, {"ico", "image/x-icon"}, {"pdf", "application/pdf"}, {"wasm", "application/wasm"},
                {"webp", "image/webp"}, {"woff2", "font/woff2"}}) {
            mimeTypes.put(m[0], m[1]);
        }
    }

    void mimeType(String extension, String type) {
        mimeTypes.put(extension.toLowerCase(java.util.Locale.ROOT), type);
    }

    /** Initialises listeners, filters and load-on-startup servlets (Servlet 6 §8.2.3, §11.3). */
    void start() throws ServletException {
        checkNotStarted();
        started = true;
        ServletContextEvent event = new ServletContextEvent(this);
        for (ServletContextListener l : contextListeners) l.contextInitialized(event);
        for (FilterEntry f : filterOrder) f.init();
        for (FilterEntry f : filters.values()) f.init(); // unmapped filters are initialised too
        List<ServletEntry> onStartup = new ArrayList<>();
        for (ServletEntry s : servlets.values()) if (s.loadOnStartup >= 0 || eagerServlets) onStartup.add(s);
        onStartup.sort((a, b) -> Integer.compare(a.loadOnStartup, b.loadOnStartup));
        for (ServletEntry s : onStartup) s.servlet();
    }

    /** Destroys servlets and filters, then tells the listeners in reverse order (§11.3.4). */
    void stop() {
        List<ServletEntry> ss = new ArrayList<>(servlets.values());
        Collections.reverse(ss);
        for (ServletEntry s : ss) s.destroy();
        for (FilterEntry f : filters.values()) f.destroy();
        ServletContextEvent event = new ServletContextEvent(this);
        List<ServletContextListener> ls = new ArrayList<>(contextListeners);
        Collections.reverse(ls);
        for (ServletContextListener l : ls) l.contextDestroyed(event);
        sessions.invalidateAll();
    }

    @Override
    public String getContextPath() {
        return contextPath;
    }

    @Override
    public ServletContext getContext(String uripath) {
        return uripath != null && (uripath.equals(contextPath) || uripath.startsWith(contextPath + "/")) ? this : null;
    }

    @Override
    public int getMajorVersion() {
        return 6;
    }

    @Override
    public int getMinorVersion() {
        return 0;
    }

    @Override
    public int getEffectiveMajorVersion() {
        return 6;
    }

    @Override
    public int getEffectiveMinorVersion() {
        return 0;
    }

    @Override
    public String getMimeType(String file) {
        if (file == null) return null;
        int dot = file.lastIndexOf('.');
        return dot < 0 ? null : mimeTypes.get(file.substring(dot + 1).toLowerCase(java.util.Locale.ROOT));
    }

    /** Resources come from the class path under {@code META-INF/resources} (as in a jar's web fragment). */
    @Override
    public Set<String> getResourcePaths(String path) {
        return null; // a jar cannot be listed portably; frameworks serve static files from the class path themselves
    }

    @Override
    public URL getResource(String path) throws MalformedURLException {
        if (path == null || !path.startsWith("/")) throw new MalformedURLException("a resource path starts with /: " + path);
        return classLoader.getResource("META-INF/resources" + path);
    }

    @Override
    public InputStream getResourceAsStream(String path) {
        if (path == null || !path.startsWith("/")) return null;
        return classLoader.getResourceAsStream("META-INF/resources" + path);
    }

    @Override
    public RequestDispatcher getRequestDispatcher(String path) {
        if (path == null || !path.startsWith("/")) return null;
        return new Dispatcher(this, path, null);
    }

    @Override
    public RequestDispatcher getNamedDispatcher(String name) {
        ServletEntry e = servlets.get(name);
        return e == null ? null : new Dispatcher(this, null, e);
    }

    @Override
    public void log(String msg) {
        System.err.println("afterburn-servlet: " + msg);
    }

    @Override
    public void log(String message, Throwable throwable) {
        java.io.StringWriter sw = new java.io.StringWriter();
        throwable.printStackTrace(new java.io.PrintWriter(sw));
        System.err.print("afterburn-servlet: " + message + "\n" + sw); // one write: one record
        System.err.flush();
    }

    @Override
    public String getRealPath(String path) {
        return null; // no exploded web application on disk
    }

    @Override
    public String getServerInfo() {
        return SERVER_INFO;
    }

    @Override
    public String getInitParameter(String name) {
        return initParameters.get(name);
    }

    @Override
    public Enumeration<String> getInitParameterNames() {
        return Collections.enumeration(new ArrayList<>(initParameters.keySet()));
    }

    @Override
    public boolean setInitParameter(String name, String value) {
        checkNotStarted();
        if (name == null) throw new NullPointerException("name");
        return initParameters.putIfAbsent(name, value) == null;
    }

    @Override
    public Object getAttribute(String name) {
        return attributes.get(name);
    }

    @Override
    public Enumeration<String> getAttributeNames() {
        return Collections.enumeration(new ArrayList<>(attributes.keySet()));
    }

    @Override
    public void setAttribute(String name, Object object) {
        if (name == null) throw new NullPointerException("name");
        if (object == null) {
            removeAttribute(name);
            return;
        }
        Object old = attributes.put(name, object);
        for (ServletContextAttributeListener l : contextAttributeListeners) {
            if (old == null) l.attributeAdded(new ServletContextAttributeEvent(this, name, object));
            else l.attributeReplaced(new ServletContextAttributeEvent(this, name, old));
        }
    }

    @Override
    public void removeAttribute(String name) {
        Object old = attributes.remove(name);
        if (old != null) {
            for (ServletContextAttributeListener l : contextAttributeListeners) {
                l.attributeRemoved(new ServletContextAttributeEvent(this, name, old));
            }
        }
    }

    @Override
    public String getServletContextName() {
        return displayName;
    }

    void displayName(String name) {
        this.displayName = name;
    }

    @Override
    public SessionCookieConfig getSessionCookieConfig() {
        return sessions.cookieConfig;
    }

    @Override
    public void setSessionTrackingModes(Set<SessionTrackingMode> modes) {
        checkNotStarted();
        if (modes.contains(SessionTrackingMode.SSL) || modes.contains(SessionTrackingMode.URL)) {
            throw new IllegalArgumentException("afterburn-servlet: sessions are tracked by cookie only, got " + modes);
        }
    }

    @Override
    public Set<SessionTrackingMode> getDefaultSessionTrackingModes() {
        return EnumSet.of(SessionTrackingMode.COOKIE);
    }

    @Override
    public Set<SessionTrackingMode> getEffectiveSessionTrackingModes() {
        return EnumSet.of(SessionTrackingMode.COOKIE);
    }

    @Override
    public JspConfigDescriptor getJspConfigDescriptor() {
        return null;
    }

    @Override
    public void declareRoles(String... roleNames) {
        checkNotStarted();
    }

    @Override
    public String getVirtualServerName() {
        return "afterburn";
    }

    @Override
    public int getSessionTimeout() {
        return sessions.timeoutMinutes();
    }

    @Override
    public void setSessionTimeout(int sessionTimeout) {
        checkNotStarted();
        sessions.timeoutMinutes(sessionTimeout);
    }

    @Override
    public String getRequestCharacterEncoding() {
        return requestCharacterEncoding;
    }

    @Override
    public void setRequestCharacterEncoding(String encoding) {
        checkNotStarted();
        this.requestCharacterEncoding = encoding;
    }

    @Override
    public String getResponseCharacterEncoding() {
        return responseCharacterEncoding;
    }

    @Override
    public void setResponseCharacterEncoding(String encoding) {
        checkNotStarted();
        this.responseCharacterEncoding = encoding;
    }
}
