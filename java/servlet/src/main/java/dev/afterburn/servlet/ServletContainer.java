package dev.afterburn.servlet;

import dev.afterburn.runtime.AfterBurn;
import dev.afterburn.runtime.Handler;
import dev.afterburn.runtime.Response;
import jakarta.servlet.DispatcherType;
import jakarta.servlet.Filter;
import jakarta.servlet.FilterRegistration;
import jakarta.servlet.Servlet;
import jakarta.servlet.ServletContainerInitializer;
import jakarta.servlet.ServletContext;
import jakarta.servlet.ServletException;
import jakarta.servlet.ServletRegistration;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * A servlet container whose connector is the AfterBurn pipe: one {@link ServletContext}, the
 * servlets, filters and listeners registered in it, served as an AfterBurn {@link Handler}.
 * Each request runs on its lane's thread (PROTOCOL.md §2.5): lanes are the container's
 * threads, so with {@code -lanes K} up to K requests run at once.
 *
 * <pre>{@code
 * public static void main(String[] args) throws Exception {
 *     ServletContainer.serve(new HelloServlet());                     // one servlet for every path
 * }
 *
 * ServletContainer c = ServletContainer.create("/shop");              // a context path, or ""
 * c.addServlet("orders", new OrdersServlet(), "/orders/*");
 * c.addFilter("auth", new AuthFilter(), "/*");
 * c.errorPage(404, "/not-found");
 * c.serve();                                                          // start, serve until EOF, stop
 * }</pre>
 *
 * <p>Everything a {@code ServletContext} allows before it is initialised works on
 * {@link #servletContext()} too ({@code addServlet}, {@code addFilter}, {@code addListener},
 * init parameters, session cookie config), so a framework's own initialiser can set the
 * context up, as Spring Boot's does through {@code afterburn-spring-boot-starter}.
 */
public final class ServletContainer {
    private final PipeContext context;
    private final Map<ServletContainerInitializer, Set<Class<?>>> initializers = new LinkedHashMap<>();
    private volatile boolean started;
    private volatile boolean stopped;

    private ServletContainer(String contextPath, ClassLoader loader) {
        this.context = new PipeContext(contextPath, loader);
    }

    /** @return a container with the empty (root) context path */
    public static ServletContainer create() {
        return create("");
    }

    /**
     * @param contextPath {@code ""}, or a path that starts and does not end with {@code /}
     * @return a container with that context path; requests outside it are answered 404
     */
    public static ServletContainer create(String contextPath) {
        return new ServletContainer(contextPath, Thread.currentThread().getContextClassLoader() != null
                ? Thread.currentThread().getContextClassLoader() : ServletContainer.class.getClassLoader());
    }

    /** @return the container's one context, open to registrations until {@link #start()} */
    public ServletContext servletContext() {
        return context;
    }

    /**
     * Registers a servlet for URL patterns (Servlet 6 §12.2), async supported.
     *
     * @param name the servlet name, unique in the context
     * @param servlet the servlet
     * @param urlPatterns {@code /exact}, {@code /prefix/*}, {@code *.ext}, {@code /} or {@code ""}
     * @return its registration, to set init parameters or load-on-startup
     * @throws IllegalArgumentException for a pattern of no such kind, a pattern another servlet has, or a name taken
     */
    public ServletRegistration.Dynamic addServlet(String name, Servlet servlet, String... urlPatterns) {
        ServletRegistration.Dynamic r = context.addServlet(name, servlet);
        if (r == null) throw new IllegalArgumentException("afterburn-servlet: a servlet named \"" + name + "\" is registered already");
        r.setAsyncSupported(true);
        Set<String> conflicts = r.addMapping(urlPatterns);
        if (!conflicts.isEmpty()) throw new IllegalArgumentException("afterburn-servlet: these patterns belong to another servlet: " + conflicts);
        return r;
    }

    /**
     * Registers a filter for URL patterns, for REQUEST and ASYNC dispatches, after the filters
     * registered before it; async supported.
     *
     * @param name the filter name, unique in the context
     * @param filter the filter
     * @param urlPatterns the patterns it applies to
     * @return its registration, for other mappings (servlet names, dispatcher types)
     */
    public FilterRegistration.Dynamic addFilter(String name, Filter filter, String... urlPatterns) {
        FilterRegistration.Dynamic r = context.addFilter(name, filter);
        if (r == null) throw new IllegalArgumentException("afterburn-servlet: a filter named \"" + name + "\" is registered already");
        r.setAsyncSupported(true);
        if (urlPatterns.length > 0) r.addMappingForUrlPatterns(EnumSet.of(DispatcherType.REQUEST, DispatcherType.ASYNC), true, urlPatterns);
        return r;
    }

    /**
     * The page (a path in the context) that renders {@code sendError(status)}, dispatched
     * with the attributes of Servlet 6 §10.9.1.
     *
     * @param status the status, 400 to 599
     * @param path a path in the context, starting with {@code /}
     * @return this container
     */
    public ServletContainer errorPage(int status, String path) {
        context.checkNotStarted();
        if (status < 400 || status > 599) throw new IllegalArgumentException("afterburn-servlet: an error page is for a status 400-599, got " + status);
        context.statusErrorPages.put(status, checkedPath(path));
        return this;
    }

    /**
     * The page for every {@code sendError} without a page of its own status (Spring Boot's
     * {@code /error}).
     *
     * @param path a path in the context, starting with {@code /}
     * @return this container
     */
    public ServletContainer errorPage(String path) {
        context.checkNotStarted();
        context.globalErrorPage = checkedPath(path);
        return this;
    }

    private static String checkedPath(String path) {
        if (path == null || !path.startsWith("/")) throw new IllegalArgumentException("afterburn-servlet: an error page path starts with /, got " + path);
        return path;
    }

    /**
     * A {@link ServletContainerInitializer} to run at {@link #start()}, before the context's
     * listeners are told (Servlet 6 §8.2.4), with the classes it asked for (the container does
     * not scan the class path for {@code @HandlesTypes}).
     *
     * @param initializer the initializer
     * @param classes the classes to hand it; may be empty
     * @return this container
     */
    public ServletContainer initializer(ServletContainerInitializer initializer, Set<Class<?>> classes) {
        context.checkNotStarted();
        initializers.put(initializer, classes);
        return this;
    }

    /**
     * Initialise every servlet at {@link #start()}, not only those with a load-on-startup:
     * a worker then pays its servlets' initialisation before its handshake (PROTOCOL.md §3.1)
     * instead of on its first request. The Spring Boot starter sets this for the
     * DispatcherServlet, which Spring Boot otherwise initialises on the first request.
     *
     * @param eager whether to
     * @return this container
     */
    public ServletContainer initialiseEveryServletAtStart(boolean eager) {
        context.checkNotStarted();
        context.eagerServlets = eager;
        return this;
    }

    /** @return the requests in the container now, async ones included (for a graceful shutdown) */
    public int activeRequests() {
        return context.active.get();
    }

    /**
     * A MIME type for {@code ServletContext.getMimeType}.
     *
     * @param extension without the dot
     * @param type the type
     * @return this container
     */
    public ServletContainer mimeType(String extension, String type) {
        context.mimeType(extension, type);
        return this;
    }

    /**
     * Runs the initializers, tells the context listeners, initialises every filter and the
     * load-on-startup servlets. A failure here is the function's initialisation failure
     * (PROTOCOL.md §9.1): let it end the process before the handshake.
     *
     * @throws ServletException what an initializer, listener, filter or servlet threw
     */
    public synchronized void start() throws ServletException {
        if (started) throw new IllegalStateException("afterburn-servlet: the container is started already");
        for (Map.Entry<ServletContainerInitializer, Set<Class<?>>> e : initializers.entrySet()) {
            e.getKey().onStartup(e.getValue(), context);
        }
        context.start();
        started = true;
    }

    /** @return whether {@link #start()} completed */
    public boolean started() {
        return started;
    }

    /**
     * The container as an AfterBurn handler: each request becomes a servlet request and
     * response on the lane's thread. An exception that escapes the filters and servlet is the
     * handler's failure: {@code 500} with the §8.1 body before the response committed, an
     * incomplete response after it (PROTOCOL.md §8.3); the worker serves on.
     *
     * @return the handler
     * @throws IllegalStateException before {@link #start()}
     */
    public Handler handler() {
        if (!started) throw new IllegalStateException("afterburn-servlet: start() the container before serving it");
        return request -> Response.deferred((head, out) -> new Exchange(context, request).run(head, out));
    }

    /** Destroys servlets and filters and tells the listeners (Servlet 6 §11.3.4); once. */
    public synchronized void stop() {
        if (!started || stopped) return;
        stopped = true;
        context.stop();
    }

    /**
     * Starts the container, serves it until the watchdog closes the request pipe (§9.4), then
     * stops it.
     *
     * @throws ServletException when starting failed
     */
    public void serve() throws ServletException {
        if (!started) start();
        try {
            AfterBurn.serve(handler());
        } finally {
            stop();
        }
    }

    /**
     * One servlet for every path ({@code /*}): {@code getServletPath()} is empty and
     * {@code getPathInfo()} the path. The servlet is initialised here, before the worker's
     * handshake ({@link #initialiseEveryServletAtStart}), so its {@code init} is the
     * function's initialisation: slow there is slow to become ready, failing there fails the
     * start (PROTOCOL.md §9.1).
     *
     * @param servlet the servlet
     * @param filters filters in front of it, for every path, in order
     * @return a started container
     * @throws ServletException when the servlet or a filter failed to initialise
     */
    public static ServletContainer of(Servlet servlet, Filter... filters) throws ServletException {
        ServletContainer c = create();
        c.initialiseEveryServletAtStart(true);
        List<String> names = new ArrayList<>();
        for (Filter f : filters) {
            String name = f.getClass().getName() + "#" + names.size();
            names.add(name);
            c.addFilter(name, f, "/*");
        }
        c.addServlet(servlet.getClass().getName(), servlet, "/*");
        c.start();
        return c;
    }

    /**
     * Serves one servlet (and filters in front of it) for every path until the watchdog shuts
     * the worker down.
     *
     * @param servlet the servlet
     * @param filters filters in front of it, in order
     * @throws ServletException when the servlet or a filter failed to initialise
     */
    public static void serve(Servlet servlet, Filter... filters) throws ServletException {
        of(servlet, filters).serve();
    }
}
