package dev.afterburn.servlet;

import jakarta.servlet.Filter;
import jakarta.servlet.FilterRegistration;
import jakarta.servlet.RequestDispatcher;
import jakarta.servlet.Servlet;
import jakarta.servlet.ServletContext;
import jakarta.servlet.ServletContextAttributeEvent;
import jakarta.servlet.ServletContextAttributeListener;
import jakarta.servlet.ServletContextEvent;
import jakarta.servlet.ServletContextListener;
import jakarta.servlet.ServletException;
import jakarta.servlet.ServletRegistration;
import jakarta.servlet.ServletRequestAttributeListener;
import jakarta.servlet.ServletRequestListener;
import jakarta.servlet.SessionCookieConfig;
import jakarta.servlet.SessionTrackingMode;
import jakarta.servlet.descriptor.JspConfigDescriptor;
import jakarta.servlet.http.HttpSessionAttributeListener;
import jakarta.servlet.http.HttpSessionIdListener;
import jakarta.servlet.http.HttpSessionListener;
import java.io.InputStream;
import java.net.MalformedURLException;
import java.net.URL;
import java.util.ArrayList;
import java.util.Collections;
import java.util.EnumSet;
import java.util.Enumeration;
import java.util.EventListener;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * The one {@link ServletContext} of a {@link ServletContainer}: registrations, mappings,
 * listeners, attributes, error pages and the session store. Registration is open until
 * {@link #start}, as in any container (Servlet 6 §4.4: "IllegalStateException if this
 * ServletContext has already been initialized").
 */
final class PipeContext implements ServletContext {
    static final String SERVER_INFO = "AfterBurn-Servlet/0.1.0";

    private final String contextPath;
    private final ClassLoader classLoader;
    final Mapper mapper = new Mapper();
    private final Map<String, ServletEntry> servlets = new LinkedHashMap<>();
    private final Map<String, FilterEntry> filters = new LinkedHashMap<>();
    /** Filters in chain order: those mapped with isMatchAfter=false first, each list in order of mapping. */
    private final List<FilterEntry> filtersBefore = new ArrayList<>();
    private final List<FilterEntry> filtersAfter = new ArrayList<>();
    volatile List<FilterEntry> filterOrder = List.of();
    private final Map<String, Object> attributes = new ConcurrentHashMap<>();
    private final Map<String, String> initParameters = new ConcurrentHashMap<>();
    final List<ServletContextListener> contextListeners = new CopyOnWriteArrayList<>();
    final List<ServletContextAttributeListener> contextAttributeListeners = new CopyOnWriteArrayList<>();
    final List<ServletRequestListener> requestListeners = new CopyOnWriteArrayList<>();
    final List<ServletRequestAttributeListener> requestAttributeListeners = new CopyOnWriteArrayList<>();
    final List<HttpSessionListener> sessionListeners = new CopyOnWriteArrayList<>();
    final List<HttpSessionAttributeListener> sessionAttributeListeners = new CopyOnWriteArrayList<>();
    final List<HttpSessionIdListener> sessionIdListeners = new CopyOnWriteArrayList<>();
    final Map<Integer, String> statusErrorPages = new ConcurrentHashMap<>();
    final Map<Class<? extends Throwable>, String> exceptionErrorPages = new ConcurrentHashMap<>();
    volatile String globalErrorPage;
    private final Map<String, String> mimeTypes = new ConcurrentHashMap<>();
    final Sessions sessions;
    private volatile boolean started;
    volatile boolean eagerServlets; // initialise every servlet at start, load-on-startup or not
    final java.util.concurrent.atomic.AtomicInteger active = new java.util.concurrent.atomic.AtomicInteger();
    private volatile String requestCharacterEncoding;
    private volatile String responseCharacterEncoding;
    private volatile String displayName = "afterburn";

    PipeContext(String contextPath, ClassLoader classLoader) {
        if (!contextPath.isEmpty() && (!contextPath.startsWith("/") || contextPath.endsWith("/"))) {
            throw new IllegalArgumentException("afterburn-servlet: a context path is empty or starts and does not end with /, got \"" + contextPath + "\"");
        }
        this.contextPath = contextPath;
        this.classLoader = classLoader;
        this.sessions = new Sessions(this);
        for (String[] m : new String[][] {{"html", "text/html"}, {"htm", "text/html"}, {"txt", "text/plain"},
                {"css", "text/css"}, {"js", "text/javascript"}, {"json", "application/json"}, {"xml", "application/xml"},
                {"png", "image/png"}, {"jpg", "image/jpeg"}, {"jpeg", "image/jpeg"}, {"gif", "image/gif"},
                {"svg", "image/svg+xml"}, {"ico", "image/x-icon"}, {"pdf", "application/pdf"}, {"wasm", "application/wasm"},
                {"webp", "image/webp"}, {"woff2", "font/woff2"}}) {
            mimeTypes.put(m[0], m[1]);
        }
    }

    void checkNotStarted() {
        if (started) throw new IllegalStateException("afterburn-servlet: the ServletContext is already initialised");
    }

    boolean started() {
        return started;
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

    void orderFilter(FilterEntry f, boolean isMatchAfter) {
        filtersBefore.remove(f);
        filtersAfter.remove(f);
        (isMatchAfter ? filtersAfter : filtersBefore).add(f);
        List<FilterEntry> all = new ArrayList<>(filtersBefore);
        all.addAll(filtersAfter);
        filterOrder = List.copyOf(all);
    }

    Map<String, ServletEntry> servletEntries() {
        return servlets;
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
    public ServletRegistration.Dynamic addServlet(String servletName, String className) {
        return addServlet(servletName, loadClass(className, Servlet.class));
    }

    @Override
    public ServletRegistration.Dynamic addServlet(String servletName, Servlet servlet) {
        return register(servletName, servlet, null);
    }

    @Override
    public ServletRegistration.Dynamic addServlet(String servletName, Class<? extends Servlet> servletClass) {
        return register(servletName, null, servletClass);
    }

    private ServletRegistration.Dynamic register(String name, Servlet servlet, Class<? extends Servlet> type) {
        checkNotStarted();
        if (name == null || name.isEmpty()) throw new IllegalArgumentException("afterburn-servlet: a servlet name is empty");
        if (servlets.containsKey(name)) return null; // §4.4.1.1: a servlet of that name exists
        ServletEntry e = new ServletEntry(this, name, servlet, type);
        servlets.put(name, e);
        return e;
    }

    @Override
    public ServletRegistration.Dynamic addJspFile(String servletName, String jspFile) {
        throw new UnsupportedOperationException("afterburn-servlet: there is no JSP engine");
    }

    @Override
    public <T extends Servlet> T createServlet(Class<T> clazz) throws ServletException {
        return instantiate(clazz);
    }

    @Override
    public ServletRegistration getServletRegistration(String servletName) {
        return servlets.get(servletName);
    }

    @Override
    public Map<String, ? extends ServletRegistration> getServletRegistrations() {
        return Collections.unmodifiableMap(new HashMap<>(servlets));
    }

    @Override
    public FilterRegistration.Dynamic addFilter(String filterName, String className) {
        return addFilter(filterName, loadClass(className, Filter.class));
    }

    @Override
    public FilterRegistration.Dynamic addFilter(String filterName, Filter filter) {
        return registerFilter(filterName, filter, null);
    }

    @Override
    public FilterRegistration.Dynamic addFilter(String filterName, Class<? extends Filter> filterClass) {
        return registerFilter(filterName, null, filterClass);
    }

    private FilterRegistration.Dynamic registerFilter(String name, Filter filter, Class<? extends Filter> type) {
        checkNotStarted();
        if (name == null || name.isEmpty()) throw new IllegalArgumentException("afterburn-servlet: a filter name is empty");
        if (filters.containsKey(name)) return null;
        FilterEntry e = new FilterEntry(this, name, filter, type);
        filters.put(name, e);
        return e;
    }

    @Override
    public <T extends Filter> T createFilter(Class<T> clazz) throws ServletException {
        return instantiate(clazz);
    }

    @Override
    public FilterRegistration getFilterRegistration(String filterName) {
        return filters.get(filterName);
    }

    @Override
    public Map<String, ? extends FilterRegistration> getFilterRegistrations() {
        return Collections.unmodifiableMap(new HashMap<>(filters));
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
    public void addListener(String className) {
        addListener(loadClass(className, EventListener.class));
    }

    @Override
    public <T extends EventListener> void addListener(T t) {
        boolean known = false;
        if (t instanceof ServletContextListener) {
            checkNotStarted();
            contextListeners.add((ServletContextListener) t);
            known = true;
        }
        if (t instanceof ServletContextAttributeListener) {
            contextAttributeListeners.add((ServletContextAttributeListener) t);
            known = true;
        }
        if (t instanceof ServletRequestListener) {
            requestListeners.add((ServletRequestListener) t);
            known = true;
        }
        if (t instanceof ServletRequestAttributeListener) {
            requestAttributeListeners.add((ServletRequestAttributeListener) t);
            known = true;
        }
        if (t instanceof HttpSessionListener) {
            sessionListeners.add((HttpSessionListener) t);
            known = true;
        }
        if (t instanceof HttpSessionAttributeListener) {
            sessionAttributeListeners.add((HttpSessionAttributeListener) t);
            known = true;
        }
        if (t instanceof HttpSessionIdListener) {
            sessionIdListeners.add((HttpSessionIdListener) t);
            known = true;
        }
        if (!known) {
            throw new IllegalArgumentException("afterburn-servlet: " + t.getClass().getName() + " is none of the listener types of Servlet 6 §11.2");
        }
    }

    @Override
    public void addListener(Class<? extends EventListener> listenerClass) {
        try {
            addListener(createListener(listenerClass));
        } catch (ServletException e) {
            throw new IllegalArgumentException(e.getMessage(), e);
        }
    }

    @Override
    public <T extends EventListener> T createListener(Class<T> clazz) throws ServletException {
        return instantiate(clazz);
    }

    private <T> T instantiate(Class<T> clazz) throws ServletException {
        try {
            return clazz.getDeclaredConstructor().newInstance();
        } catch (java.lang.reflect.InvocationTargetException e) {
            throw new ServletException("afterburn-servlet: constructing " + clazz.getName() + " failed", e.getCause());
        } catch (ReflectiveOperationException e) {
            throw new ServletException("afterburn-servlet: " + clazz.getName() + " has no public no-argument constructor", e);
        }
    }

    private <T> Class<? extends T> loadClass(String name, Class<T> type) {
        try {
            return Class.forName(name, true, classLoader).asSubclass(type);
        } catch (ClassNotFoundException | ClassCastException e) {
            throw new IllegalArgumentException("afterburn-servlet: " + name + " is not a " + type.getSimpleName() + " on the class path", e);
        }
    }

    @Override
    public JspConfigDescriptor getJspConfigDescriptor() {
        return null;
    }

    @Override
    public ClassLoader getClassLoader() {
        return classLoader;
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

    Set<String> servletNames() {
        return new HashSet<>(servlets.keySet());
    }
}
