package dev.afterburn.servlet;

import jakarta.servlet.MultipartConfigElement;
import jakarta.servlet.Servlet;
import jakarta.servlet.ServletConfig;
import jakarta.servlet.ServletContext;
import jakarta.servlet.ServletException;
import jakarta.servlet.ServletRegistration;
import jakarta.servlet.ServletSecurityElement;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.Enumeration;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/** A registered servlet: its registration (Servlet 6 §4.4.3), its config, and its one-time init. */
final class ServletEntry implements ServletRegistration.Dynamic, ServletConfig {
    private final PipeContext context;
    private final String name;
    private final Class<? extends Servlet> type; // when made lazily
    private Servlet servlet;
    private volatile boolean initialised;
    final Map<String, String> initParameters = new LinkedHashMap<>();
    final List<String> patterns = new ArrayList<>();
    int loadOnStartup = -1;
    boolean asyncSupported;
    MultipartConfigElement multipart;

    ServletEntry(PipeContext context, String name, Servlet servlet, Class<? extends Servlet> type) {
        this.context = context;
        this.name = name;
        this.servlet = servlet;
        this.type = type;
    }

    /** The servlet, made and initialised on first use (or at start for load-on-startup, §8.2.3). */
    Servlet servlet() throws ServletException {
        if (!initialised) {
            synchronized (this) {
                if (!initialised) {
                    if (servlet == null) servlet = context.createServlet(type);
                    servlet.init(this);
                    initialised = true;
                }
            }
        }
        return servlet;
    }

    void destroy() {
        synchronized (this) {
            if (initialised) {
                initialised = false;
                servlet.destroy();
            }
        }
    }

    @Override
    public void setLoadOnStartup(int loadOnStartup) {
        context.checkNotStarted();
        this.loadOnStartup = loadOnStartup;
    }

    @Override
    public Set<String> setServletSecurity(ServletSecurityElement constraint) {
        // Authentication is the application's (Spring Security, a filter): §11 of the README.
        throw new UnsupportedOperationException("afterburn-servlet: container security constraints are not supported; use a filter");
    }

    @Override
    public void setMultipartConfig(MultipartConfigElement config) {
        this.multipart = config;
    }

    @Override
    public void setRunAsRole(String roleName) {
        // no container security: nothing to run as
    }

    @Override
    public void setAsyncSupported(boolean supported) {
        context.checkNotStarted();
        this.asyncSupported = supported;
    }

    @Override
    public Set<String> addMapping(String... urlPatterns) {
        context.checkNotStarted();
        Set<String> conflicts = new HashSet<>();
        for (String p : urlPatterns) {
            Mapper.checkPattern(p);
            if (context.mapper.owner(p) != null && context.mapper.owner(p) != this) conflicts.add(p);
        }
        if (!conflicts.isEmpty()) return conflicts; // §4.4.3: nothing is mapped then
        for (String p : urlPatterns) {
            patterns.add(p);
            context.mapper.add(p, this);
        }
        return Collections.emptySet();
    }

    @Override
    public Collection<String> getMappings() {
        return Collections.unmodifiableList(patterns);
    }

    @Override
    public String getRunAsRole() {
        return null;
    }

    @Override
    public String getName() {
        return name;
    }

    @Override
    public String getClassName() {
        return servlet != null ? servlet.getClass().getName() : type.getName();
    }

    @Override
    public boolean setInitParameter(String n, String value) {
        context.checkNotStarted();
        if (n == null || value == null) throw new IllegalArgumentException("init parameter name and value must not be null");
        return initParameters.putIfAbsent(n, value) == null;
    }

    @Override
    public String getInitParameter(String n) {
        return initParameters.get(n);
    }

    @Override
    public Set<String> setInitParameters(Map<String, String> parameters) {
        Set<String> conflicts = new HashSet<>();
        for (Map.Entry<String, String> e : parameters.entrySet()) {
            if (initParameters.containsKey(e.getKey())) conflicts.add(e.getKey());
        }
        if (conflicts.isEmpty()) parameters.forEach(this::setInitParameter);
        return conflicts;
    }

    @Override
    public Map<String, String> getInitParameters() {
        return Collections.unmodifiableMap(initParameters);
    }

    @Override
    public String getServletName() {
        return name;
    }

    @Override
    public ServletContext getServletContext() {
        return context;
    }

    @Override
    public Enumeration<String> getInitParameterNames() {
        return Collections.enumeration(initParameters.keySet());
    }
}
