package dev.afterburn.shapes;

import com.openfaas.model.IHandler;
import com.openfaas.model.IResponse;
import dev.afterburn.runtime.Handler;
import dev.afterburn.runtime.Response;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.Objects;

/**
 * OpenFaaS's {@code java11} template, served unchanged (PROTOCOL.md §13, {@code openfaas-http}):
 * a class extending {@code com.openfaas.model.AbstractHandler} (artifact
 * {@code com.openfaas:model}, the one the template's build names) with
 * {@code IResponse Handle(IRequest req)}.
 *
 * <pre>{@code
 * java -cp function.jar:… dev.afterburn.shapes.OpenFaas com.openfaas.function.Handler
 * }</pre>
 *
 * <p>The request is an {@link OpenFaasRequest}; the {@link IResponse} returned (usually
 * {@code com.openfaas.model.Response}) becomes the response as the template's entrypoint wrote
 * it: its status code, {@code Content-Type} from {@code getContentType()} when not empty,
 * then every field of {@code getHeaders()} (which wins over the content type), and
 * {@code getBody()} as UTF-8. A handler that returns null answers {@code 200} with an empty
 * body, and a null body is an empty one. A status code outside 200 to 599 is the handler's
 * error: {@code 500 handler_error}, logged, the worker kept (§8.3; 1xx responses are the
 * watchdog's alone, §4.4).
 */
public final class OpenFaas {
    /** The class the template's entrypoint serves, and the launcher's default. */
    public static final String DEFAULT_HANDLER = "com.openfaas.function.Handler";

    private OpenFaas() {}

    /**
     * The AfterBurn handler that serves an OpenFaaS {@code java11} handler.
     *
     * @param handler the function: an {@code AbstractHandler}, or any {@link IHandler}
     * @return a handler for {@code AfterBurn.serve}
     */
    public static Handler handler(IHandler handler) {
        Objects.requireNonNull(handler, "handler");
        return request -> response(handler.Handle(new OpenFaasRequest(request)));
    }

    /**
     * The response an {@link IResponse} makes, as described above.
     *
     * @param res the handler's result, or null
     * @return the response
     * @throws IllegalStateException for a status code outside 200 to 599 (answered 500)
     */
    static Response response(IResponse res) {
        if (res == null) return Response.ok();
        int status = res.getStatusCode();
        if (status < 100 || status > 599) {
            throw new Errors.ResultError("openfaas: statusCode " + status + " is not an HTTP status from 100 to 599");
        }
        if (status < 200) {
            throw new Errors.ResultError("openfaas: statusCode " + status + " is informational, not a final response");
        }
        Response r = Response.status(status);
        Map<String, String> headers = res.getHeaders();
        String contentType = res.getContentType();
        if (contentType != null && !contentType.isEmpty() && !hasContentType(headers)) {
            r.header("Content-Type", contentType);
        }
        if (headers != null) {
            for (Map.Entry<String, String> e : headers.entrySet()) {
                if (e.getKey() != null && e.getValue() != null) r.header(e.getKey(), e.getValue());
            }
        }
        String body = res.getBody();
        return r.body(body == null ? new byte[0] : body.getBytes(StandardCharsets.UTF_8));
    }

    private static boolean hasContentType(Map<String, String> headers) {
        if (headers == null) return false;
        for (String name : headers.keySet()) {
            if ("Content-Type".equalsIgnoreCase(name)) return true;
        }
        return false;
    }

    /**
     * Serves the handler class {@code args[0]} ({@value #DEFAULT_HANDLER} without one), made
     * with its public no-argument constructor once per worker. Opens the protocol descriptors
     * and protects stdout before loading it; a class that is no {@link IHandler} or fails to
     * initialise exits 1 with the reason on stderr.
     *
     * @param args the handler class
     */
    public static void main(String[] args) {
        Launch.serve(OpenFaas.class.getName(), args, DEFAULT_HANDLER, "com.openfaas.model.AbstractHandler", instance -> {
            if (!(instance instanceof IHandler)) {
                throw new IllegalArgumentException(instance.getClass().getName() + " is not a " + IHandler.class.getName()
                        + " (extend com.openfaas.model.AbstractHandler)");
            }
            return handler((IHandler) instance);
        });
    }
}
