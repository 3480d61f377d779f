package dev.afterburn.servlet;

import jakarta.servlet.DispatcherType;
import jakarta.servlet.Filter;
import jakarta.servlet.FilterConfig;
import jakarta.servlet.FilterRegistration;
import jakarta.servlet.ServletException;
import java.util.ArrayList;
import java.util.Collection;
import java.util.EnumSet;
import java.util.List;

/** A registered filter and its mappings (Servlet 6 §6.2.4): URL patterns or servlet names, per dispatcher type. */
final class FilterEntry extends Registration implements FilterRegistration.Dynamic, FilterConfig {
    /** One mapping: a URL pattern or a servlet name, the dispatcher types it applies to. */
    record Mapping(String urlPattern, String servletName, EnumSet<DispatcherType> types) {}

    private final Class<? extends Filter> type; // made from it when no instance was given
    private Filter filter;
    private boolean initialised;
    final List<Mapping> mappings = new ArrayList<>();

    FilterEntry(PipeContext context, String name, Filter filter, Class<? extends Filter> type) {
        super(context, name, type);
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
    public String getFilterName() {
        return getName();
    }

    @Override
    Object instance() {
        return filter;
    }
}
