package dev.afterburn.servlet;

import jakarta.servlet.DispatcherType;
import jakarta.servlet.FilterChain;
import jakarta.servlet.ServletException;
import jakarta.servlet.ServletRequest;
import jakarta.servlet.ServletResponse;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;

/**
 * The filters of one dispatch, in order, then the servlet (Servlet 6 §6.2.4: URL-pattern
 * mappings before servlet-name mappings, each in the order of registration). A filter that
 * does not call {@code doFilter} ends the chain.
 */
final class Chain implements FilterChain {
    private final List<FilterEntry> filters;
    private final ServletEntry servlet;
    private int next;

    private Chain(List<FilterEntry> filters, ServletEntry servlet) {
        this.filters = filters;
        this.servlet = servlet;
    }

    static Chain of(PipeContext context, DispatcherType type, String path, ServletEntry servlet) {
        List<FilterEntry> byPattern = new ArrayList<>();
        List<FilterEntry> byName = new ArrayList<>();
        String name = servlet == null ? null : servlet.getName();
        for (FilterEntry f : context.filterOrder) {
            if (path != null && f.applies(type, path, null)) byPattern.add(f);
            else if (f.applies(type, null, name)) byName.add(f);
        }
        byPattern.addAll(byName);
        return new Chain(byPattern, servlet);
    }

    /** Servlet 6 §2.3.3.3: async is supported only if every filter and the servlet support it. */
    boolean asyncSupported() {
        for (FilterEntry f : filters) if (!f.asyncSupported) return false;
        return servlet == null || servlet.asyncSupported;
    }

    @Override
    public void doFilter(ServletRequest request, ServletResponse response) throws IOException, ServletException {
        if (next < filters.size()) {
            filters.get(next++).filter().doFilter(request, response, this);
            return;
        }
        if (servlet != null) servlet.servlet().service(request, response);
    }
}
