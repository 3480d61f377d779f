package dev.afterburn.runtime;

import com.fasterxml.jackson.core.type.TypeReference;
import com.fasterxml.jackson.databind.JavaType;
import com.fasterxml.jackson.databind.ObjectMapper;

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
 * time on the calling thread, or, when the watchdog gives the worker several lanes (§2.5), one
 * at a time per lane on a thread per lane. {@code serve} returns when the watchdog closes the request pipe
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
     * Opens the protocol descriptors and protects stdout now (PROTOCOL.md §2.4), as the
     * launcher {@link Main} does before it loads user classes. For frameworks started by a
     * main of their own (Spring Boot's launcher): call it first thing, so that what prints
     * before {@link #serve} (a banner, in stdio mode) goes to stderr rather than onto the
     * protocol stream. Calling it again does nothing; {@code serve} calls it too. A malformed
     * {@code AFTERBURN_FDS} or lane variable exits 2 with a message on stderr (§2.3).
     */
    public static void protectStdout() {
        try {
            Environment.protocolStreams();
        } catch (Environment.Invalid e) {
            LibraryLog.stderr().error(null, e.getMessage());
            System.exit(2);
        }
    }

    /**
     * Serves {@code handler} until the watchdog shuts the worker down, on up to
     * {@value Lanes#DEFAULT_MAX} lanes, or as many as the system property
     * {@code afterburn.maxLanes} says (see {@link #serve(Handler, int)}).
     *
     * @param handler called once per request
     */
    public static void serve(Handler handler) {
        int maxLanes;
        try {
            maxLanes = Lanes.maxFromProperty(System.getProperty(Lanes.MAX_PROPERTY));
        } catch (Environment.Invalid e) {
            LibraryLog.stderr().error(null, e.getMessage());
            System.exit(2);
            return;
        }
        serve(handler, maxLanes);
    }

    /**
     * Serves {@code handler} until the watchdog shuts the worker down, with up to
     * {@code maxLanes} requests in flight at once.
     *
     * <p>Lanes (PROTOCOL.md §2.5): a watchdog started with {@code -lanes K} gives the worker K
     * pairs of pipes, and the library serves min(K, {@code maxLanes}) of them, each on a
     * thread of its own, so the handler is called from several threads at once and must be
     * thread-safe (see {@link Handler}). The handshake reply announces {@code maxLanes}
     * ({@code AfterBurn-Streams}). Without {@code -lanes} there is one lane, served on the
     * calling thread. Each request has its own cancellation ({@link Request#cancelled()})
     * and per-request log ({@link Request#log(String)}). A lane whose request breaks the
     * framing rules is answered and closed while the other lanes serve on; the JVM then exits
     * 1 once every lane has ended, and 0 when every lane ended by EOF between requests.
     *
     * @param handler called once per request, from up to {@code maxLanes} threads at once
     * @param maxLanes the most requests in flight at once, at least 1
     */
    public static void serve(Handler handler, int maxLanes) {
        if (handler == null) throw new NullPointerException("handler");
        if (maxLanes < 1) throw new IllegalArgumentException("maxLanes must be at least 1, got " + maxLanes);
        Worker.Outcome outcome;
        try {
            outcome = Lanes.serve(handler, maxLanes, System.getenv());
        } catch (Environment.Invalid e) {
            LibraryLog.stderr().error(null, e.getMessage()); // §2.3, §2.5: exit non-zero with a message on stderr
            System.exit(2);
            return;
        }
        if (outcome != Worker.Outcome.CLOSED) {
            System.exit(1); // §3.4, §8.8: the stream cannot be trusted; the watchdog replaces the worker
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
        check(mapper, type, function);
        return new JsonHandler<I, O>(mapper, mapper.constructType(type), (input, request) -> function.apply(input));
    }

    /**
     * Serves a typed JSON function whose request body type is generic, such as a list of
     * orders, with a {@link TypeReference}:
     *
     * <pre>{@code
     * AfterBurn.serveJson(mapper, new TypeReference<List<Order>>() {}, orders -> pricing.quoteAll(orders));
     * }</pre>
     *
     * @param mapper decodes requests and encodes responses
     * @param type the request body type, generic parameters included
     * @param function computes the response value
     * @param <I> the request body type
     * @param <O> the response body type
     */
    public static <I, O> void serveJson(ObjectMapper mapper, TypeReference<I> type, JsonFunction<I, O> function) {
        serve(jsonHandler(mapper, type, function));
    }

    /**
     * Serves a typed JSON function whose function also receives the {@link Request}: its id,
     * deadline ({@link Request#timeRemaining()}), cancellation, headers and query.
     *
     * <pre>{@code
     * AfterBurn.serveJson(mapper, Order.class, (order, request) -> pricing.quote(order, request.timeRemaining()));
     * }</pre>
     *
     * @param mapper decodes requests and encodes responses
     * @param type the request body type
     * @param function computes the response value from the body and the request
     * @param <I> the request body type
     * @param <O> the response body type
     */
    public static <I, O> void serveJson(ObjectMapper mapper, Class<I> type, JsonRequestFunction<I, O> function) {
        serve(jsonHandler(mapper, type, function));
    }

    /**
     * As {@link #serveJson(ObjectMapper, Class, JsonRequestFunction)}, for a generic body type.
     *
     * @param mapper decodes requests and encodes responses
     * @param type the request body type, generic parameters included
     * @param function computes the response value from the body and the request
     * @param <I> the request body type
     * @param <O> the response body type
     */
    public static <I, O> void serveJson(ObjectMapper mapper, TypeReference<I> type, JsonRequestFunction<I, O> function) {
        serve(jsonHandler(mapper, type, function));
    }

    /**
     * A typed JSON function of a generic body type as a {@link Handler}.
     *
     * @param mapper decodes requests and encodes responses
     * @param type the request body type, generic parameters included
     * @param function computes the response value
     * @param <I> the request body type
     * @param <O> the response body type
     * @return the handler
     */
    public static <I, O> Handler jsonHandler(ObjectMapper mapper, TypeReference<I> type, JsonFunction<I, O> function) {
        check(mapper, type, function);
        return new JsonHandler<I, O>(mapper, mapper.constructType(type), (input, request) -> function.apply(input));
    }

    /**
     * A typed JSON function that also receives the request, as a {@link Handler}.
     *
     * @param mapper decodes requests and encodes responses
     * @param type the request body type
     * @param function computes the response value from the body and the request
     * @param <I> the request body type
     * @param <O> the response body type
     * @return the handler
     */
    public static <I, O> Handler jsonHandler(ObjectMapper mapper, Class<I> type, JsonRequestFunction<I, O> function) {
        check(mapper, type, function);
        return new JsonHandler<I, O>(mapper, mapper.constructType(type), function);
    }

    /**
     * A typed JSON function of a generic body type that also receives the request, as a
     * {@link Handler}.
     *
     * @param mapper decodes requests and encodes responses
     * @param type the request body type, generic parameters included
     * @param function computes the response value from the body and the request
     * @param <I> the request body type
     * @param <O> the response body type
     * @return the handler
     */
    public static <I, O> Handler jsonHandler(ObjectMapper mapper, TypeReference<I> type, JsonRequestFunction<I, O> function) {
        check(mapper, type, function);
        return new JsonHandler<I, O>(mapper, mapper.constructType(type), function);
    }

    /**
     * A typed JSON function whose body type is a Jackson {@link JavaType} built at run time
     * (for example {@code mapper.getTypeFactory().constructCollectionType(List.class, type)}).
     * The caller vouches that values of {@code type} are {@code I}s.
     *
     * @param mapper decodes requests and encodes responses
     * @param type the request body type
     * @param function computes the response value from the body and the request
     * @param <I> the request body type
     * @param <O> the response body type
     * @return the handler
     */
    public static <I, O> Handler jsonHandler(ObjectMapper mapper, JavaType type, JsonRequestFunction<I, O> function) {
        check(mapper, type, function);
        return new JsonHandler<I, O>(mapper, type, function);
    }

    /**
     * Serves a typed JSON function whose body type is a Jackson {@link JavaType}; see
     * {@link #jsonHandler(ObjectMapper, JavaType, JsonRequestFunction)}.
     *
     * @param mapper decodes requests and encodes responses
     * @param type the request body type
     * @param function computes the response value from the body and the request
     * @param <I> the request body type
     * @param <O> the response body type
     */
    public static <I, O> void serveJson(ObjectMapper mapper, JavaType type, JsonRequestFunction<I, O> function) {
        serve(jsonHandler(mapper, type, function));
    }

    private static void check(ObjectMapper mapper, Object type, Object function) {
        if (mapper == null) throw new NullPointerException("mapper");
        if (type == null) throw new NullPointerException("type");
        if (function == null) throw new NullPointerException("function");
    }
}
