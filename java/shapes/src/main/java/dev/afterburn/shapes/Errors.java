package dev.afterburn.shapes;

import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.afterburn.runtime.Request;
import dev.afterburn.runtime.Response;
import java.nio.charset.StandardCharsets;

/**
 * The answers PROTOCOL.md §13 gives a request or a result an adapter cannot use.
 *
 * <p>A result that makes no response is the handler's error: the adapter throws
 * {@link ResultError}, which the library answers {@code 500 handler_error} with the §8.1 body,
 * logging the exception and its stack, and the worker serves on (§8.3). A request that makes
 * no event is the client's: {@code 400 bad_request} with the §8.1 body, what is wrong in the
 * log only, since the message of an error body never carries request bytes (§8.1).
 */
final class Errors {
    private Errors() {}

    /** A handler's result that the adapter cannot turn into a response (§13): 500 handler_error. */
    static final class ResultError extends IllegalStateException {
        private static final long serialVersionUID = 1L;

        ResultError(String message) {
            super(message);
        }

        ResultError(String message, Throwable cause) {
            super(message, cause);
        }
    }

    /** {@code 400}, {@code AfterBurn-Error: bad_request}, the §8.1 JSON body; {@code why} is logged. */
    static Response badRequest(Request request, String message, String why) {
        request.log("afterburn: " + request.method() + " " + request.path() + ": " + message + ": " + why);
        ObjectNode body = JsonNodeFactory.instance.objectNode()
                .put("type", "bad_request")
                .put("message", message)
                .put("request_id", request.requestId());
        return Response.status(400)
                .header("Content-Type", "application/json")
                .header("AfterBurn-Error", "bad_request")
                .body(body.toString().getBytes(StandardCharsets.UTF_8));
    }
}
