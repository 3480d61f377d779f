package dev.afterburn.examples.hello;

import dev.afterburn.runtime.Handler;
import dev.afterburn.runtime.Request;
import dev.afterburn.runtime.Response;

/**
 * The smallest AfterBurn function: say hello, with the request id and the time left.
 *
 * <pre>
 * go/bin/afterburn-watchdog -listen_host 127.0.0.1 -port 8080 -- \
 *     java -cp java/examples/hello/target/hello.jar dev.afterburn.runtime.Main dev.afterburn.examples.hello.Hello
 * curl 'http://127.0.0.1:8080/?name=you'
 * </pre>
 */
public final class Hello implements Handler {
    /** Start-up work goes in the constructor: it runs once, before the worker is ready. */
    public Hello() {
        System.out.println("hello: ready"); // stdout is a log pipe, never the protocol
    }

    @Override
    public Response handle(Request request) {
        String name = request.queryParam("name"); // decoded: ?name=J%C3%BCrgen+M is "Jürgen M"
        if (name == null || name.isEmpty()) name = "world";
        String deadline = request.hasDeadline() ? request.timeRemaining().toMillis() + " ms left" : "no deadline";
        return Response.ok().body("hello, " + name + " (request " + request.requestId() + ", " + deadline + ")\n");
    }
}
