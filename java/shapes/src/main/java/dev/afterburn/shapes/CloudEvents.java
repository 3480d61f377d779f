package dev.afterburn.shapes;

import com.google.cloud.functions.CloudEventsFunction;
import dev.afterburn.runtime.Handler;
import dev.afterburn.runtime.Request;
import dev.afterburn.runtime.Response;
import io.cloudevents.CloudEvent;
import java.util.Objects;
import java.util.function.Consumer;
import java.util.function.Function;

/**
 * CloudEvents 1.0 over HTTP, served on the CloudEvents Java SDK's {@link CloudEvent}
 * (PROTOCOL.md §13, {@code cloudevents}): binary and structured mode in; out, a CloudEvent in
 * binary mode, a plain {@link Response} as it is, nothing as {@code 204}.
 *
 * <pre>{@code
 * // Google Cloud Functions' shape (com.google.cloud.functions:functions-framework-api):
 * public class Logger implements CloudEventsFunction {
 *     public void accept(CloudEvent event) { … }
 * }
 * // java -cp … dev.afterburn.shapes.CloudEvents com.example.Logger
 *
 * // Or a function that replies:
 * AfterBurn.serve(CloudEvents.handler((CloudEvent event) -> CloudEventBuilder.v1(event).withType("reply").build()));
 * }</pre>
 *
 * <p>A request that is no event (see {@code CloudEventsHttp.read}) is the client's error:
 * {@code 400 bad_request} with the §8.1 body, what is wrong in the log. A result that is none
 * of a CloudEvent, a {@code Response} or null is the handler's: {@code 500 handler_error}.
 * Structured mode needs {@code io.cloudevents:cloudevents-json-jackson} on the classpath.
 */
public final class CloudEvents {
    private CloudEvents() {}

    /**
     * The AfterBurn handler that serves a function of a CloudEvent. Its result: a
     * {@link CloudEvent}, written in binary mode ({@code 200}); a {@link Response}, sent as it
     * is; null, {@code 204}.
     *
     * @param function the function
     * @return a handler for {@code AfterBurn.serve}
     */
    public static Handler handler(Function<? super CloudEvent, ?> function) {
        Objects.requireNonNull(function, "function");
        return request -> {
            CloudEvent event;
            try {
                event = CloudEventsHttp.read(request, request.bodyBytes());
            } catch (CloudEventsHttp.NotAnEvent e) {
                return notAnEvent(request, e);
            }
            return response(function.apply(event));
        };
    }

    /**
     * The AfterBurn handler that serves a Google Cloud Functions {@link CloudEventsFunction}:
     * {@code 204} once {@code accept} returned.
     *
     * @param function the function
     * @return a handler for {@code AfterBurn.serve}
     */
    public static Handler accepting(CloudEventsFunction function) {
        Objects.requireNonNull(function, "function");
        return request -> {
            CloudEvent event;
            try {
                event = CloudEventsHttp.read(request, request.bodyBytes());
            } catch (CloudEventsHttp.NotAnEvent e) {
                return notAnEvent(request, e);
            }
            function.accept(event);
            return Response.status(204);
        };
    }

    private static Response notAnEvent(Request request, CloudEventsHttp.NotAnEvent e) {
        return Errors.badRequest(request, "the request is not a CloudEvent", e.getMessage());
    }

    /** A function's result as §13 reads it: an event in binary mode, a Response as it is, null as 204. */
    static Response response(Object result) {
        if (result == null) return Response.status(204);
        if (result instanceof CloudEvent) return CloudEventsHttp.write((CloudEvent) result);
        if (result instanceof Response) return (Response) result;
        throw new Errors.ResultError("cloudevents: the function returned a " + result.getClass().getName()
                + "; want a CloudEvent, a dev.afterburn.runtime.Response or null");
    }

    /**
     * Serves the class {@code args[0]}, made once per worker with its public no-argument
     * constructor: a {@link CloudEventsFunction}, a {@code Function<CloudEvent, ?>} or a
     * {@code Consumer<CloudEvent>} (answered {@code 204}). Opens the protocol descriptors and
     * protects stdout before loading it; a class that is none of them or fails to initialise
     * exits 1 with the reason on stderr.
     *
     * @param args the function class
     */
    @SuppressWarnings("unchecked")
    public static void main(String[] args) {
        Launch.serve(CloudEvents.class.getName(), args, null, "CloudEventsFunction, Function<CloudEvent, ?> or Consumer<CloudEvent>",
                instance -> {
                    if (instance instanceof Function) return handler((Function<? super CloudEvent, ?>) instance);
                    if (instance instanceof Consumer) {
                        Consumer<? super CloudEvent> consumer = (Consumer<? super CloudEvent>) instance;
                        return handler(event -> {
                            consumer.accept(event);
                            return null;
                        });
                    }
                    if (classPresent("com.google.cloud.functions.CloudEventsFunction") && instance instanceof CloudEventsFunction) {
                        return accepting((CloudEventsFunction) instance);
                    }
                    throw new IllegalArgumentException(instance.getClass().getName()
                            + " is none of com.google.cloud.functions.CloudEventsFunction, java.util.function.Function"
                            + " and java.util.function.Consumer");
                });
    }

    private static boolean classPresent(String name) {
        try {
            Class.forName(name, false, CloudEvents.class.getClassLoader());
            return true;
        } catch (ClassNotFoundException e) {
            return false;
        }
    }
}
