package dev.afterburn.servlet;

import jakarta.servlet.DispatcherType;
import jakarta.servlet.RequestDispatcher;
import jakarta.servlet.ServletException;
import jakarta.servlet.ServletRequest;
import jakarta.servlet.ServletRequestWrapper;
import jakarta.servlet.ServletResponse;
import jakarta.servlet.http.HttpServletResponse;
import jakarta.servlet.http.HttpServletResponseWrapper;
import java.io.IOException;
import java.util.Map;

/**
 * Forward and include (Servlet 6 §9): the target is mapped like a request, runs through the
 * filters mapped for FORWARD or INCLUDE, and sees the request's path methods (forward) or the
 * {@code jakarta.servlet.include.*} attributes (include) of §9.3–§9.4.
 */
final class Dispatcher implements RequestDispatcher {
    private final PipeContext context;
    private final String path; // with an optional query; null for a named dispatcher
    private final ServletEntry named;

    Dispatcher(PipeContext context, String path, ServletEntry named) {
        this.context = context;
        this.path = path;
        this.named = named;
    }

    static PipeRequest unwrap(ServletRequest request) {
        ServletRequest r = request;
        while (r instanceof ServletRequestWrapper) r = ((ServletRequestWrapper) r).getRequest();
        if (r instanceof PipeRequest) return (PipeRequest) r;
        throw new IllegalArgumentException("afterburn-servlet: the request to dispatch is not one of this container's (nor a wrapper of one)");
    }

    @Override
    public void forward(ServletRequest request, ServletResponse response) throws ServletException, IOException {
        PipeRequest pr = unwrap(request);
        Exchange ex = pr.exchange();
        if (ex.response().isCommitted()) throw new IllegalStateException("afterburn-servlet: forward after the response was committed");
        ex.response().resetBuffer();
        ex.dispatch(DispatcherType.FORWARD, path, named, request, response);
        if (!pr.isAsyncStarted()) ex.response().closeAfterForward(); // §9.4: the response is sent before forward returns
    }

    @Override
    public void include(ServletRequest request, ServletResponse response) throws ServletException, IOException {
        PipeRequest pr = unwrap(request);
        Exchange.State saved = pr.exchange().save();
        try {
            if (path != null) {
                String p = path;
                int q = p.indexOf('?');
                String query = q < 0 ? null : p.substring(q + 1);
                p = q < 0 ? p : p.substring(0, q);
                Mapper.Match m = context.mapper.map(p);
                pr.attribute(INCLUDE_REQUEST_URI, context.getContextPath() + p);
                pr.attribute(INCLUDE_CONTEXT_PATH, context.getContextPath());
                pr.attribute(INCLUDE_SERVLET_PATH, m == null ? null : m.servletPath());
                pr.attribute(INCLUDE_PATH_INFO, m == null ? null : m.pathInfo());
                pr.attribute(INCLUDE_QUERY_STRING, query);
                pr.attribute(INCLUDE_MAPPING, m);
                if (query != null) pr.parameters(Forms.merge(query, pr.parameters()));
                if (m == null) {
                    ((HttpServletResponse) response).sendError(404);
                    return;
                }
                pr.dispatcherType = DispatcherType.INCLUDE;
                Chain.of(context, DispatcherType.INCLUDE, p, m.entry()).doFilter(request, new IncludedResponse((HttpServletResponse) response));
            } else {
                pr.dispatcherType = DispatcherType.INCLUDE;
                Chain.of(context, DispatcherType.INCLUDE, null, named).doFilter(request, new IncludedResponse((HttpServletResponse) response));
            }
        } finally {
            for (String a : new String[] {INCLUDE_REQUEST_URI, INCLUDE_CONTEXT_PATH, INCLUDE_SERVLET_PATH,
                    INCLUDE_PATH_INFO, INCLUDE_QUERY_STRING, INCLUDE_MAPPING}) {
                pr.attribute(a, null);
            }
            pr.exchange().restore(saved);
        }
    }

    /** §9.3: an included servlet cannot change the status or set fields; those calls are ignored. */
    static final class IncludedResponse extends HttpServletResponseWrapper {
        IncludedResponse(HttpServletResponse response) {
            super(response);
        }

        @Override
        public void setStatus(int sc) {}

        @Override
        public void setHeader(String name, String value) {}

        @Override
        public void addHeader(String name, String value) {}

        @Override
        public void setIntHeader(String name, int value) {}

        @Override
        public void addIntHeader(String name, int value) {}

        @Override
        public void setDateHeader(String name, long date) {}

        @Override
        public void addDateHeader(String name, long date) {}

        @Override
        public void setContentType(String type) {}

        @Override
        public void setContentLength(int len) {}

        @Override
        public void setContentLengthLong(long len) {}

        @Override
        public void setCharacterEncoding(String charset) {}

        @Override
        public void addCookie(jakarta.servlet.http.Cookie cookie) {}

        @Override
        public void setTrailerFields(java.util.function.Supplier<Map<String, String>> supplier) {}
    }
}
