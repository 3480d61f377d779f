package dev.afterburn.servlet;

import dev.afterburn.runtime.Request;
import dev.afterburn.runtime.ResponseHead;
import jakarta.servlet.AsyncContext;
import jakarta.servlet.DispatcherType;
import jakarta.servlet.RequestDispatcher;
import jakarta.servlet.ServletConnection;
import jakarta.servlet.ServletException;
import jakarta.servlet.ServletRequest;
import jakarta.servlet.ServletRequestEvent;
import jakarta.servlet.ServletRequestListener;
import jakarta.servlet.ServletResponse;
import jakarta.servlet.http.HttpServletMapping;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.Map;
import java.util.concurrent.CancellationException;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;

/**
 * One request through the container, on its lane's thread: the REQUEST dispatch, then, while
 * the request is async, the ASYNC dispatches and the completion it waits for, then the error
 * page of a {@code sendError}, then the end of the response (theory of operation: README).
 *
 * <p>Threads: everything runs on the lane's thread except what the application does on threads
 * of its own after {@code startAsync}; the lane's thread then waits on {@link #lock} for
 * {@code complete()}, {@code dispatch()} or the timeout, and a write made by another thread
 * before it called {@code complete()} is seen by the lane through that lock.
 */
final class Exchange {
    /** There is no connection: the pipe's lane stands for it. */
    static final ServletConnection CONNECTION = new ServletConnection() {
        @Override
        public String getConnectionId() {
            return "afterburn-pipe";
        }

        @Override
        public String getProtocol() {
            return "HTTP/1.1";
        }

        @Override
        public String getProtocolConnectionId() {
            return "";
        }

        @Override
        public boolean isSecure() {
            return false;
        }
    };

    /** How long an async request waits without a timeout of its own (Tomcat's default too). */
    static final long DEFAULT_ASYNC_TIMEOUT_MS = 30_000;

    private final PipeContext context;
    private final Request request;
    private ResponseHead head;
    private OutputStream body;
    private PipeRequest req;
    private PipeResponse resp;

    private final Object lock = new Object();
    private Async async; // the current async context, guarded by lock
    private boolean asyncStarted; // between startAsync and its dispatch or complete, guarded by lock
    private String pendingDispatch; // a path to dispatch to, guarded by lock
    private boolean completed; // guarded by lock

    Exchange(PipeContext context, Request request) {
        this.context = context;
        this.request = request;
    }

    PipeContext context() {
        return context;
    }

    PipeRequest request() {
        return req;
    }

    PipeResponse response() {
        return resp;
    }

    ResponseHead head() {
        return head;
    }

    OutputStream body() {
        return body;
    }

    /** The deferred writer of the runtime's response: the whole exchange. */
    void run(ResponseHead head, OutputStream body) throws Exception {
        this.head = head;
        this.body = body;
        req = new PipeRequest(this, request, context);
        resp = new PipeResponse(this);
        req.attribute(AfterBurnRequest.REQUEST, request);
        req.attribute(AfterBurnRequest.REQUEST_ID, request.requestId());
        if (request.hasDeadline()) req.attribute(AfterBurnRequest.DEADLINE, Instant.now().plus(request.timeRemaining()));
        req.attribute(AfterBurnRequest.CANCELLED, (BooleanSupplier) request::cancelled);
        ServletRequestEvent event = new ServletRequestEvent(context, req);
        context.active.incrementAndGet();
        for (ServletRequestListener l : context.requestListeners) l.requestInitialized(event);
        try {
            String path = pathInContext();
            if (path != null) {
                dispatch(DispatcherType.REQUEST, path, null, req, resp);
                awaitAsync();
            }
            writeError();
            resp.finish();
        } finally {
            context.active.decrementAndGet();
            for (ServletRequestListener l : context.requestListeners) l.requestDestroyed(event);
        }
    }

    /** The canonical path below the context path; null when the request was answered 400 or 404 here. */
    private String pathInContext() throws IOException {
        String path;
        try {
            path = Paths.canonical(request.path());
        } catch (Paths.Rejected e) {
            resp.sendError(400, e.getMessage());
            return null;
        }
        String cp = context.getContextPath();
        if (cp.isEmpty()) return path;
        if (path.equals(cp)) return "/";
        if (!path.startsWith(cp + "/")) {
            resp.sendError(404);
            return null;
        }
        return path.substring(cp.length());
    }

    /** The dispatch state of the request, saved around a forward or include. */
    record State(String requestUri, String queryString, String servletPath, String pathInfo, HttpServletMapping mapping,
                 DispatcherType type, Map<String, String[]> parameters, boolean asyncSupported) {}

    State save() {
        return new State(req.requestUri, req.queryString, req.servletPath, req.pathInfo, req.mapping, req.dispatcherType,
                req.parameters(), req.asyncSupported);
    }

    void restore(State s) {
        req.requestUri = s.requestUri;
        req.queryString = s.queryString;
        req.servletPath = s.servletPath;
        req.pathInfo = s.pathInfo;
        req.mapping = s.mapping;
        req.dispatcherType = s.type;
        req.parameters(s.parameters);
        req.asyncSupported = s.asyncSupported;
    }

    /**
     * One dispatch: maps {@code target} (a path below the context, with an optional query, or a
     * named servlet), sets the request's path methods for it and runs its chain. REQUEST and
     * ASYNC change the request for good; FORWARD and ERROR put it back afterwards.
     */
    void dispatch(DispatcherType type, String target, ServletEntry named, ServletRequest request, ServletResponse response)
            throws ServletException, IOException {
        boolean restore = type == DispatcherType.FORWARD || type == DispatcherType.ERROR;
        State saved = restore ? save() : null;
        try {
            if (type == DispatcherType.FORWARD && req.getAttribute(RequestDispatcher.FORWARD_REQUEST_URI) == null && named == null) {
                req.attribute(RequestDispatcher.FORWARD_REQUEST_URI, req.requestUri);
                req.attribute(RequestDispatcher.FORWARD_CONTEXT_PATH, context.getContextPath());
                req.attribute(RequestDispatcher.FORWARD_SERVLET_PATH, req.servletPath);
                req.attribute(RequestDispatcher.FORWARD_PATH_INFO, req.pathInfo);
                req.attribute(RequestDispatcher.FORWARD_QUERY_STRING, req.queryString);
                req.attribute(RequestDispatcher.FORWARD_MAPPING, req.mapping);
            }
            req.dispatcherType = type;
            if (named != null) {
                Chain chain = Chain.of(context, type, null, named);
                req.asyncSupported = chain.asyncSupported();
                chain.doFilter(request, response);
                return;
            }
            String path = target;
            int q = path.indexOf('?');
            if (q >= 0) {
                String query = path.substring(q + 1);
                path = path.substring(0, q);
                if (type != DispatcherType.REQUEST) {
                    req.parameters(Forms.merge(query, req.parameters()));
                    req.queryString = query;
                }
            }
            if (type != DispatcherType.REQUEST) req.requestUri = context.getContextPath() + path;
            Mapper.Match m = context.mapper.map(path);
            if (m == null) {
                resp.sendError(404);
                return;
            }
            req.servletPath = m.servletPath();
            req.pathInfo = m.pathInfo();
            req.mapping = m;
            Chain chain = Chain.of(context, type, path, m.entry());
            req.asyncSupported = chain.asyncSupported();
            chain.doFilter(request, response);
        } finally {
            if (restore && !asyncStarted()) restore(saved);
        }
    }

    // ---- async (Servlet 6 §2.3.3.3) ----------------------------------------------------------

    AsyncContext startAsync(ServletRequest request, ServletResponse response) {
        synchronized (lock) {
            if (asyncStarted) throw new IllegalStateException("afterburn-servlet: startAsync twice in one dispatch");
            if (completed) throw new IllegalStateException("afterburn-servlet: startAsync after complete()");
            boolean original = request == req && response == resp;
            String path = req.servletPath + (req.pathInfo == null ? "" : req.pathInfo)
                    + (req.queryString == null ? "" : "?" + req.queryString);
            if (async == null) {
                async = new Async(this, request, response, original, path);
            } else {
                async = async.restart(request, response, original); // §2.3.3.3: listeners get onStartAsync
            }
            asyncStarted = true;
            return async;
        }
    }

    boolean asyncStarted() {
        synchronized (lock) {
            return asyncStarted;
        }
    }

    AsyncContext asyncContext() {
        synchronized (lock) {
            return asyncStarted ? async : null;
        }
    }

    /** AsyncContext.dispatch: the lane's thread dispatches once the current dispatch returned. */
    void asyncDispatch(String path) {
        synchronized (lock) {
            if (!asyncStarted) throw new IllegalStateException("afterburn-servlet: dispatch() outside async mode (already dispatched or completed)");
            pendingDispatch = path;
            asyncStarted = false;
            lock.notifyAll();
        }
    }

    void complete() {
        synchronized (lock) {
            if (completed) return;
            if (!asyncStarted && pendingDispatch == null && async == null) {
                throw new IllegalStateException("afterburn-servlet: complete() outside async mode");
            }
            completed = true;
            asyncStarted = false;
            lock.notifyAll();
        }
    }

    /**
     * While the request is async, waits for complete(), dispatch() or the timeout (the
     * async timeout, and never past the request's deadline), and runs what comes.
     */
    private void awaitAsync() throws ServletException, IOException {
        while (true) {
            req.input().runListener();
            resp.output().runListener();
            String dispatchTo;
            boolean timedOut = false;
            boolean cancelled = false;
            synchronized (lock) {
                if (async == null || (!asyncStarted && pendingDispatch == null)) break;
                long timeout = async.getTimeout();
                long end = timeout > 0 ? System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeout) : Long.MAX_VALUE;
                while (asyncStarted && pendingDispatch == null && !completed) {
                    long left = end - System.nanoTime();
                    if (left <= 0) {
                        timedOut = true;
                        break;
                    }
                    try {
                        lock.wait(Math.max(1, TimeUnit.NANOSECONDS.toMillis(Math.min(left, TimeUnit.DAYS.toNanos(1)))));
                    } catch (InterruptedException e) {
                        cancelled = true; // the runtime's cancellation (PROTOCOL.md §2.5, §5.2)
                        break;
                    }
                }
                dispatchTo = pendingDispatch;
                pendingDispatch = null;
            }
            if (cancelled) {
                async.fireError(new CancellationException("afterburn: the exchange was cancelled (its deadline passed)"));
                synchronized (lock) {
                    if (asyncStarted) {
                        completed = true;
                        asyncStarted = false;
                    }
                }
            } else if (timedOut) {
                async.fireTimeout();
                synchronized (lock) {
                    if (asyncStarted && pendingDispatch == null && !completed) {
                        // §2.3.3.3: no listener completed or dispatched: an error dispatch with 500, then complete.
                        asyncStarted = false;
                        completed = true;
                        if (!resp.isCommitted()) resp.sendError(500);
                    }
                }
                continue;
            }
            if (dispatchTo != null) {
                dispatch(DispatcherType.ASYNC, dispatchTo, null, async.getRequest(), async.getResponse());
                continue;
            }
            synchronized (lock) {
                if (!completed) continue;
            }
            async.fireComplete();
            break;
        }
    }

    // ---- errors (Servlet 6 §10.9) ------------------------------------------------------------

    /**
     * A {@code sendError} not yet written: dispatches to the error page for its status (or the
     * global one) with the attributes of §10.9.1, or writes a short text body.
     */
    private void writeError() throws ServletException, IOException {
        int sc = resp.errorStatus();
        if (sc < 0 || resp.output().committed()) return;
        String message = resp.errorMessage();
        resp.clearError();
        resp.statusInternal(sc);
        String page = context.statusErrorPages.get(sc);
        if (page == null) page = context.globalErrorPage;
        if (page != null && req.dispatcherType != DispatcherType.ERROR) {
            req.attribute(RequestDispatcher.ERROR_STATUS_CODE, sc);
            req.attribute(RequestDispatcher.ERROR_MESSAGE, message == null ? "" : message);
            req.attribute(RequestDispatcher.ERROR_REQUEST_URI, req.requestUri);
            req.attribute(RequestDispatcher.ERROR_SERVLET_NAME, req.mapping == null ? null : req.mapping.getServletName());
            dispatch(DispatcherType.ERROR, page, null, req, resp);
            if (resp.errorStatus() >= 0 && !resp.output().committed()) { // the error page failed with sendError itself
                resp.clearError();
                defaultErrorBody(resp.getStatus(), null);
            }
            return;
        }
        defaultErrorBody(sc, message);
    }

    /** The default error: cookies and other fields kept, the body a short line of text (§10.9.1 lets the container choose). */
    private void defaultErrorBody(int sc, String message) throws IOException {
        resp.statusInternal(sc);
        resp.setContentLengthLong(-1);
        if (sc == 204 || sc == 304) return;
        resp.setContentType("text/plain;charset=UTF-8");
        String text = sc + (message == null || message.isEmpty() ? "" : " " + message) + "\n";
        resp.getOutputStream().write(text.getBytes(StandardCharsets.UTF_8));
    }

    /** The async timeout when the application sets none: the request's deadline, else 30 s. */
    long defaultAsyncTimeout() {
        if (request.hasDeadline()) return Math.max(1, request.timeRemaining().toMillis());
        return DEFAULT_ASYNC_TIMEOUT_MS;
    }
}
