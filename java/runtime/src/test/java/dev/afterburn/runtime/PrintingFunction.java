package dev.afterburn.runtime;

import java.nio.charset.StandardCharsets;

/**
 * A function that prints protocol-looking text to stdout at start-up and on every request,
 * run by {@link WatchdogTest} under the real watchdog through the launcher.
 */
public final class PrintingFunction implements Handler {
    public PrintingFunction() {
        System.out.println("HTTP/1.1 200 OK banner-from-constructor");
    }

    @Override
    public Response handle(Request request) {
        System.out.println("HTTP/1.1 200 OK printed-by-" + request.requestId());
        System.out.print("no newline, no flush");
        return Response.ok().header("Content-Type", "text/plain")
                .body(("clean " + request.path()).getBytes(StandardCharsets.US_ASCII));
    }
}
