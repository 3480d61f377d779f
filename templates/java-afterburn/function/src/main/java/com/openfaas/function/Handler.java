package com.openfaas.function;

import dev.afterburn.runtime.Request;
import dev.afterburn.runtime.Response;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;

/**
 * Your function. The launcher ({@code dev.afterburn.runtime.Main}) creates one Handler per
 * worker JVM, then calls {@link #handle} for every request, one at a time.
 */
public final class Handler implements dev.afterburn.runtime.Handler {
    private final String greeting;

    /** Start-up work goes here: it runs once per worker, before the worker is reported ready. */
    public Handler() {
        greeting = "Hello";
    }

    @Override
    public Response handle(Request request) throws Exception {
        // System.out is safe: it goes to the watchdog's log, never into a response.
        System.out.println(request.method() + " " + request.path() + " (request " + request.requestId() + ")");
        if ("POST".equals(request.method())) {
            // Echo the body back with its content type.
            String type = request.headers().first("content-type");
            return Response.ok()
                    .header("Content-Type", type != null ? type : "application/octet-stream")
                    .body(request.bodyBytes());
        }
        String name = queryParameter(request.query(), "name");
        return Response.ok()
                .header("Content-Type", "text/plain; charset=utf-8")
                .body(greeting + ", " + (name == null || name.isEmpty() ? "world" : name) + "!\n");
    }

    /** The first value of a query parameter, percent-decoded, or null. */
    static String queryParameter(String query, String name) {
        for (String pair : query.split("&")) {
            int eq = pair.indexOf('=');
            String key = URLDecoder.decode(eq < 0 ? pair : pair.substring(0, eq), StandardCharsets.UTF_8);
            if (key.equals(name)) {
                return eq < 0 ? "" : URLDecoder.decode(pair.substring(eq + 1), StandardCharsets.UTF_8);
            }
        }
        return null;
    }
}
