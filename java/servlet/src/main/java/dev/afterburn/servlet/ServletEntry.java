package dev.afterburn.servlet;

import jakarta.servlet.MultipartConfigElement;
import jakarta.servlet.Servlet;
import jakarta.servlet.ServletConfig;
import jakarta.servlet.ServletException;
import jakarta.servlet.ServletRegistration;
import jakarta.servlet.ServletSecurityElement;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

/** A registered servlet: its registration (Servlet 6 §4.4.3), its config, and its one-time init. */
final class ServletEntry extends Registration implements ServletRegistration.Dynamic, ServletConfig {
    private final Class<? extends Servlet> type; // made from it when no instance was given
    private Servlet servlet;
    private volatile boolean initialised;
    final List<String> patterns = new ArrayList<>();
    int loadOnStartup = -1;
    MultipartConfigElement multipart;

    ServletEntry(PipeContext context, String name, Servlet servlet, Class<? extends Servlet> type) {
        super(context, name, type);
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
    public String getServletName() {
        return getName();
    }

    @Override
    Object instance() {
        return servlet;
    }
}
