package dev.afterburn.servlet;

import jakarta.servlet.AsyncContext;
import jakarta.servlet.AsyncEvent;
import jakarta.servlet.AsyncListener;
import jakarta.servlet.ServletContext;
import jakarta.servlet.ServletException;
import jakarta.servlet.ServletRequest;
import jakarta.servlet.ServletResponse;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;

/**
 * An async request (Servlet 6 §2.3.3.3): the response outlives {@code service()}, and the lane
 * stays with it until {@code complete()} or a {@code dispatch()} that does not start async
 * again. {@link #start(Runnable)} runs on a container thread of its own: a daemon thread per
 * task, named after the request, since the lane's thread is the one waiting.
 */
final class Async implements AsyncContext {
    private static final ExecutorService STARTS = Executors.newCachedThreadPool(r -> {
        Thread t = new Thread(r, "afterburn-servlet-async");
        t.setDaemon(true);
        return t;
    });

    private record Registered(AsyncListener listener, ServletRequest request, ServletResponse response) {}

    private final Exchange exchange;
    private final ServletRequest request;
    private final ServletResponse response;
    private final boolean original;
    private final String path; // where dispatch() goes
    private final List<Registered> listeners;
    private volatile long timeout;

    Async(Exchange exchange, ServletRequest request, ServletResponse response, boolean original, String path) {
        this(exchange, request, response, original, path, new ArrayList<>(), exchange.defaultAsyncTimeout());
    }

    private Async(Exchange exchange, ServletRequest request, ServletResponse response, boolean original, String path,
                  List<Registered> listeners, long timeout) {
        this.exchange = exchange;
        this.request = request;
        this.response = response;
        this.original = original;
        this.path = path;
        this.listeners = listeners;
        this.timeout = timeout;
    }

    /** startAsync again after a dispatch: the listeners are told and must register again (§2.3.3.3). */
    Async restart(ServletRequest req, ServletResponse resp, boolean orig) {
        List<Registered> old;
        synchronized (listeners) {
            old = new ArrayList<>(listeners);
            listeners.clear();
        }
        Async next = new Async(exchange, req, resp, orig, path, listeners, timeout);
        for (Registered r : old) {
            try {
                r.listener.onStartAsync(new AsyncEvent(next, r.request, r.response));
            } catch (IOException e) {
                throw new IllegalStateException(e);
            }
        }
        return next;
    }

    @Override
    public ServletRequest getRequest() {
        return request;
    }

    @Override
    public ServletResponse getResponse() {
        return response;
    }

    @Override
    public boolean hasOriginalRequestAndResponse() {
        return original;
    }

    @Override
    public void dispatch() {
        exchange.asyncDispatch(path);
    }

    @Override
    public void dispatch(String p) {
        if (p == null || !p.startsWith("/")) throw new IllegalArgumentException("afterburn-servlet: dispatch path must start with /: " + p);
        exchange.asyncDispatch(p);
    }

    @Override
    public void dispatch(ServletContext context, String p) {
        if (context != exchange.context()) throw new IllegalArgumentException("afterburn-servlet: one ServletContext per container");
        dispatch(p);
    }

    @Override
    public void complete() {
        exchange.complete();
    }

    @Override
    public void start(Runnable run) {
        STARTS.execute(run);
    }

    @Override
    public void addListener(AsyncListener listener) {
        addListener(listener, request, response);
    }

    @Override
    public void addListener(AsyncListener listener, ServletRequest servletRequest, ServletResponse servletResponse) {
        synchronized (listeners) {
            listeners.add(new Registered(listener, servletRequest, servletResponse));
        }
    }

    @Override
    public <T extends AsyncListener> T createListener(Class<T> clazz) throws ServletException {
        try {
            return clazz.getDeclaredConstructor().newInstance();
        } catch (ReflectiveOperationException e) {
            throw new ServletException("afterburn-servlet: cannot create " + clazz.getName(), e);
        }
    }

    @Override
    public void setTimeout(long ms) {
        this.timeout = ms;
    }

    @Override
    public long getTimeout() {
        return timeout;
    }

    private List<Registered> snapshot() {
        synchronized (listeners) {
            return new ArrayList<>(listeners);
        }
    }

    void fireTimeout() throws IOException {
        for (Registered r : snapshot()) r.listener.onTimeout(new AsyncEvent(this, r.request, r.response));
    }

    void fireError(Throwable t) throws IOException {
        for (Registered r : snapshot()) r.listener.onError(new AsyncEvent(this, r.request, r.response, t));
    }

    void fireComplete() throws IOException {
        for (Registered r : snapshot()) r.listener.onComplete(new AsyncEvent(this, r.request, r.response));
    }
}
