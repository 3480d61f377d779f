package dev.afterburn.runtime;

import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.FileDescriptor;
import java.io.FileOutputStream;

/**
 * Serves a handler as an AfterBurn function: a long-lived worker process that the AfterBurn
 * watchdog starts once and then feeds requests, as HTTP/1.1 on a pipe, for as long as it
 * lives (PROTOCOL.md, "AfterBurn/1"). Start-up cost — the JVM, JIT warm-up, loading a
 * model, opening a pool — is paid once, not per request.
 *
 * <pre>{@code
 * public static void main(String[] args) {
 *     Table table = Table.load();                 // expensive, done once
 *     AfterBurn.serve(request -> Response.ok().body(table.lookup(request.query())));
 * }
 * }</pre>
 *
 * <p>Call {@code serve} once initialisation is complete: its first act is to answer the
 * watchdog's handshake, which marks the worker ready (§3.1). Requests are handled one at a
 * time on the calling thread. {@code serve} returns when the watchdog closes the request pipe
 * between two requests (§9.4), so {@code main} returns and the JVM exits 0. When the worker
 * must stop instead — a request that breaks the framing rules of §4.3 (answered with its
 * §8.1 error first), a handler that failed after its response started (§8.3), a failed
 * handshake (§3.4), a malformed {@code AFTERBURN_*} variable (§2.3) — it closes the
 * response pipe and exits the JVM with a non-zero status, and the watchdog replaces it.
 *
 * <p>Stdout: in the watchdog's default fd mode the protocol runs on descriptors 3 and 4,
 * opened by path ({@code /dev/fd/3}), and stdout is a log pipe, so printing is always safe.
 * In stdio mode and under a legacy watchdog the protocol is on stdin and stdout; Java 17 has
 * no {@code dup2}, so {@code System.out} is pointed at stderr and {@code System.in} at an
 * empty stream, but writes to fd 1 from native code are not protected there (§2.4). Start
 * with the launcher {@link Main} to protect output printed while user classes initialise.
 */
public final class AfterBurn {
    private AfterBurn() {}

    /**
     * Serves {@code handler} until the watchdog shuts the worker down.
     *
     * @param handler called once per request
     */
    public static void serve(Handler handler) {
        if (handler == null) throw new NullPointerException("handler");
        Environment.Streams streams;
        Limits limits;
        try {
            limits = Limits.fromEnvironment(System.getenv());
            streams = Environment.protocolStreams();
        } catch (Environment.Invalid e) {
            System.err.println(e.getMessage()); // §2.3: exit non-zero with a message on stderr
            System.exit(2);
            return;
        }
        Worker worker = new Worker(streams.requests(), streams.responses(), limits,
                new FileOutputStream(FileDescriptor.err));
        Worker.Outcome outcome = worker.serve(handler);
        worker.close();
        if (outcome == Worker.Outcome.FAILED) {
            System.exit(1); // §8.8: the stream cannot be trusted; the watchdog replaces the worker
        }
    }

    /**
     * Serves a typed JSON function with a default {@link ObjectMapper}.
     *
     * <pre>{@code
     * record Order(String item, int quantity) {}
     * record Quote(String item, long cents) {}
     * AfterBurn.serveJson(Order.class, order -> new Quote(order.item(), 250L * order.quantity()));
     * }</pre>
     *
     * @param type the request body type
     * @param function computes the response value
     * @param <I> the request body type
     * @param <O> the response body type
     * @see #jsonHandler(ObjectMapper, Class, JsonFunction)
     */
    public static <I, O> void serveJson(Class<I> type, JsonFunction<I, O> function) {
        serve(jsonHandler(new ObjectMapper(), type, function));
    }

    /**
     * Serves a typed JSON function with the caller's own {@link ObjectMapper}, whose modules,
     * annotations and naming strategy apply both ways.
     *
     * <pre>{@code
     * ObjectMapper mapper = new ObjectMapper()
     *         .setPropertyNamingStrategy(PropertyNamingStrategies.SNAKE_CASE);
     * AfterBurn.serveJson(mapper, Order.class, order -> new Quote(order.item(), 250L * order.quantity()));
     * }</pre>
     *
     * @param mapper decodes requests and encodes responses
     * @param type the request body type
     * @param function computes the response value
     * @param <I> the request body type
     * @param <O> the response body type
     */
    public static <I, O> void serveJson(ObjectMapper mapper, Class<I> type, JsonFunction<I, O> function) {
        serve(jsonHandler(mapper, type, function));
    }

    /**
     * A typed JSON function as a {@link Handler}, to route or test it. The request body is
     * decoded as {@code type}; a body that does not decode is answered {@code 400} with the
     * JSON error body of PROTOCOL.md §8.1 (type {@code bad_request}) naming the field and
     * position. The result is answered {@code 200} as {@code application/json}.
     *
     * @param mapper decodes requests and encodes responses
     * @param type the request body type
     * @param function computes the response value
     * @param <I> the request body type
     * @param <O> the response body type
     * @return the handler
     */
    public static <I, O> Handler jsonHandler(ObjectMapper mapper, Class<I> type, JsonFunction<I, O> function) {
        if (mapper == null || type == null || function == null) throw new NullPointerException();
        return new JsonHandler<>(mapper, type, function);
    }
}
