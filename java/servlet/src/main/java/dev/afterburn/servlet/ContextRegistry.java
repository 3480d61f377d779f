package dev.afterburn.servlet;

import jakarta.servlet.Filter;
import jakarta.servlet.FilterRegistration;
import jakarta.servlet.Servlet;
import jakarta.servlet.ServletContext;
import jakarta.servlet.ServletContextAttributeListener;
import jakarta.servlet.ServletContextListener;
import jakarta.servlet.ServletException;
import jakarta.servlet.ServletRegistration;
import jakarta.servlet.ServletRequestAttributeListener;
import jakarta.servlet.ServletRequestListener;
import jakarta.servlet.http.HttpSessionAttributeListener;
import jakarta.servlet.http.HttpSessionIdListener;
import jakarta.servlet.http.HttpSessionListener;
import java.util.ArrayList;
import java.util.Collections;
import java.util.EventListener;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * The registrations of a {@link PipeContext}: servlets, filters (and their chain order) and
 * listeners, added by name, class or instance until the context starts (Servlet 6 §4.4), and
 * the instances the container creates for them. What a request meets (mappings, attributes,
 * error pages, sessions) and the context's lifecycle are {@link PipeContext}'s.
 */
abstract sealed class ContextRegistry implements ServletContext permits PipeContext {
    final ClassLoader classLoader;
    final Map<String, ServletEntry> servlets = new LinkedHashMap<>();
    final Map<String, FilterEntry> filters = new LinkedHashMap<>();
    /** Filters in chain order: those mapped with isMatchAfter=false first, each list in order of mapping. */
    private final List<FilterEntry> filtersBefore = new ArrayList<>();
    private final List<FilterEntry> filtersAfter = new ArrayList<>();
    volatile List<FilterEntry> filterOrder = List.of();
    final List<ServletContextListener> contextListeners = new CopyOnWriteArrayList<>();
    final List<ServletContextAttributeListener> contextAttributeListeners = new CopyOnWriteArrayList<>();
    final List<ServletRequestListener> requestListeners = new CopyOnWriteArrayList<>();
    final List<ServletRequestAttributeListener> requestAttributeListeners = new CopyOnWriteArrayList<>();
    final List<HttpSessionListener> sessionListeners = new CopyOnWriteArrayList<>();
    final List<HttpSessionAttributeListener> sessionAttributeListeners = new CopyOnWriteArrayList<>();
    final List<HttpSessionIdListener> sessionIdListeners = new CopyOnWriteArrayList<>();
    volatile boolean started; // set by PipeContext.start: registration is closed

    ContextRegistry(ClassLoader classLoader) {
        this.classLoader = classLoader;
    }

    void checkNotStarted() {
        if (started) throw new IllegalStateException("afterburn-servlet: the ServletContext is already initialised");
    }

    boolean started() {
        return started;
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
        ServletEntry e = new ServletEntry((PipeContext) this, name, servlet, type);
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
        FilterEntry e = new FilterEntry((PipeContext) this, name, filter, type);
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
    public ClassLoader getClassLoader() {
        return classLoader;
    }

    Set<String> servletNames() {
        return new HashSet<>(servlets.keySet());
    }
}
