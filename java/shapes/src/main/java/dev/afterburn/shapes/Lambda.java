package dev.afterburn.shapes;

import com.amazonaws.services.lambda.runtime.RequestHandler;
import com.amazonaws.services.lambda.runtime.RequestStreamHandler;
import com.fasterxml.jackson.databind.JavaType;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.afterburn.runtime.Handler;
import dev.afterburn.runtime.Request;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.util.Objects;

/**
 * AWS Lambda handlers behind an HTTP endpoint, served unchanged (PROTOCOL.md §13,
 * {@code lambda-http}): the event of a function URL or an API Gateway HTTP API, payload format
 * 2.0, in; the result out, as those services read it.
 *
 * <pre>{@code
 * public class Hello implements RequestHandler<APIGatewayV2HTTPEvent, APIGatewayV2HTTPResponse> {
 *     public APIGatewayV2HTTPResponse handleRequest(APIGatewayV2HTTPEvent event, Context context) { … }
 * }
 * // java -cp … dev.afterburn.shapes.Lambda com.example.Hello
 * }</pre>
 *
 * <ul>
 *   <li>A {@link RequestHandler} gets the event decoded into its input type (taken from its
 *       type arguments: {@code APIGatewayV2HTTPEvent}, a {@code Map}, your own class; a raw or
 *       lambda-made handler gets a {@code Map}) with Jackson configured as Lambda's Java runtime
 *       configures it, and its output is encoded the same way before it is read as a result.</li>
 *   <li>A {@link RequestStreamHandler} reads the event's JSON from its input stream and writes
 *       the result's JSON to its output stream (nothing written: {@code null}).</li>
 * </ul>
 *
 * <p>The event, the result and the {@link com.amazonaws.services.lambda.runtime.Context} follow
 * {@code conformance/shapes/lambda-http.json}: see {@code LambdaJson} and
 * {@code LambdaContext}. A result that makes no response (a {@code statusCode} that is not an
 * integer from 100 to 599, a body that is not a string, base64 that does not decode) and an
 * output stream that is not JSON are the handler's errors: {@code 500 handler_error}, logged,
 * the worker kept.
 */
public final class Lambda {
    private Lambda() {}

    /**
     * The AfterBurn handler that serves a {@link RequestHandler}; its input type is read from
     * the class's type arguments ({@code Object}, so a {@code Map}, when they do not say).
     *
     * @param handler the function
     * @param <I> its input type
     * @param <O> its output type
     * @return a handler for {@code AfterBurn.serve}
     */
    public static <I, O> Handler handler(RequestHandler<I, O> handler) {
        Objects.requireNonNull(handler, "handler");
        JavaType[] params = LambdaJson.MAPPER.constructType(handler.getClass()).findTypeParameters(RequestHandler.class);
        JavaType input = params.length == 2 ? params[0] : LambdaJson.MAPPER.constructType(Object.class);
        return handler(handler, input);
    }

    /**
     * The AfterBurn handler that serves a {@link RequestHandler} whose input type its class
     * does not say (a lambda expression).
     *
     * @param handler the function
     * @param inputType what the event is decoded into
     * @param <I> its input type
     * @param <O> its output type
     * @return a handler for {@code AfterBurn.serve}
     */
    public static <I, O> Handler handler(RequestHandler<I, O> handler, Class<I> inputType) {
        return handler(Objects.requireNonNull(handler, "handler"), LambdaJson.MAPPER.constructType(inputType));
    }

    private static <I, O> Handler handler(RequestHandler<I, O> handler, JavaType input) {
        return request -> {
            ObjectNode event = LambdaJson.event(request, request.bodyBytes());
            I in = LambdaJson.MAPPER.convertValue(event, input);
            O out = handler.handleRequest(in, new LambdaContext(request));
            return LambdaJson.response(LambdaJson.MAPPER.valueToTree(out));
        };
    }

    /**
     * The AfterBurn handler that serves a {@link RequestStreamHandler}.
     *
     * @param handler the function
     * @return a handler for {@code AfterBurn.serve}
     */
    public static Handler handler(RequestStreamHandler handler) {
        Objects.requireNonNull(handler, "handler");
        return request -> {
            byte[] event = LambdaJson.MAPPER.writeValueAsBytes(LambdaJson.event(request, request.bodyBytes()));
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            handler.handleRequest(new ByteArrayInputStream(event), out, new LambdaContext(request));
            return LambdaJson.response(output(request, out.toByteArray()));
        };
    }

    private static JsonNode output(Request request, byte[] out) {
        if (out.length == 0) return null;
        try {
            return LambdaJson.MAPPER.readTree(out);
        } catch (IOException e) {
            throw new Errors.ResultError("lambda: the handler's output (" + out.length + " bytes) is not JSON", e);
        }
    }

    /**
     * Serves the handler class {@code args[0]}, a {@link RequestHandler} or a
     * {@link RequestStreamHandler} with a public no-argument constructor, made once per worker.
     * Opens the protocol descriptors and protects stdout before loading it; a class that is
     * neither or fails to initialise exits 1 with the reason on stderr.
     *
     * @param args the handler class
     */
    public static void main(String[] args) {
        Launch.serve(Lambda.class.getName(), args, null, "RequestHandler or RequestStreamHandler", instance -> {
            if (instance instanceof RequestStreamHandler) return handler((RequestStreamHandler) instance);
            if (instance instanceof RequestHandler) return handler((RequestHandler<?, ?>) instance);
            throw new IllegalArgumentException(instance.getClass().getName() + " is neither a "
                    + RequestHandler.class.getName() + " nor a " + RequestStreamHandler.class.getName());
        });
    }
}
