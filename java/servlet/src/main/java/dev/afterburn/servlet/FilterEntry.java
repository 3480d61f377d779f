package dev.afterburn.servlet;

import jakarta.servlet.DispatcherType;
import jakarta.servlet.Filter;
import jakarta.servlet.FilterConfig;
import jakarta.servlet.FilterRegistration;
import jakarta.servlet.ServletContext;
import jakarta.servlet.ServletException;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.EnumSet;
import java.util.Enumeration;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/** A registered filter and its mappings (Servlet 6 §6.2.4): URL patterns or servlet names, per dispatcher type. */
final class FilterEntry implements FilterRegistration.Dynamic, FilterConfig {
    /** One mapping: a URL pattern or a servlet name, the dispatcher types it applies to. */
    record Mapping(String urlPattern, String servletName, EnumSet<DispatcherType> types) {}

    private final PipeContext context;
    private final String name;
    private final Class<? extends Filter> type;
    private Filter filter;
    private boolean initialised;
    final Map<String, String> initParameters = new LinkedHashMap<>();
    final List<Mapping> mappings = new ArrayList<>();
    boolean asyncSupported;

    FilterEntry(PipeContext context, String name, Filter filter, Class<? extends Filter> type) {
        this.context = context;
        this.name = name;
        this.filter = filter;
        this.type = type;
    }

    /** Made and initialised when the container starts (§6.2.1). */
    synchronized void init() throws ServletException {
        if (initialised) return;
        if (filter == null) filter = context.createFilter(type);
        filter.init(this);
        initialised = true;
    }

    Filter filter() {
        return filter;
    }

    synchronized void destroy() {
        if (initialised) {
            initialised = false;
            filter.destroy();
        }
    }

    /** Whether this filter applies to a dispatch of {@code type} to {@code path} served by {@code servlet}. */
    boolean applies(DispatcherType type, String path, String servletName) {
        for (Mapping m : mappings) {
            if (!m.types.contains(type)) continue;
            if (m.servletName != null && (m.servletName.equals("*") || m.servletName.equals(servletName))) return true;
            if (m.urlPattern != null && path != null && Mapper.matches(m.urlPattern, path)) return true;
        }
        return false;
    }

    private static EnumSet<DispatcherType> types(EnumSet<DispatcherType> types) {
        return types == null || types.isEmpty() ? EnumSet.of(DispatcherType.REQUEST) : EnumSet.copyOf(types);
    }

    @Override
    public void addMappingForServletNames(EnumSet<DispatcherType> types, boolean isMatchAfter, String... servletNames) {
        context.checkNotStarted();
        for (String n : servletNames) mappings.add(new Mapping(null, n, types(types)));
        context.orderFilter(this, isMatchAfter);
    }

    @Override
    public Collection<String> getServletNameMappings() {
        List<String> out = new ArrayList<>();
        for (Mapping m : mappings) if (m.servletName != null) out.add(m.servletName);
        return out;
    }

    @Override
    public void addMappingForUrlPatterns(EnumSet<DispatcherType> types, boolean isMatchAfter, String... urlPatterns) {
        context.checkNotStarted();
        for (String p : urlPatterns) {
            Mapper.checkPattern(p);
            mappings.add(new Mapping(p, null, types(types)));
        }
        context.orderFilter(this, isMatchAfter);
    }

    @Override
    public Collection<String> getUrlPatternMappings() {
        List<String> out = new ArrayList<>();
        for (Mapping m : mappings) if (m.urlPattern != null) out.add(m.urlPattern);
        return out;
    }

    @Override
    public void setAsyncSupported(boolean supported) {
        context.checkNotStarted();
        this.asyncSupported = supported;
    }

    @Override
    public String getName() {
        return name;
    }

    @Override
    public String getClassName() {
        return filter != null ? filter.getClass().getName() : type.getName();
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
    public String getFilterName() {
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
