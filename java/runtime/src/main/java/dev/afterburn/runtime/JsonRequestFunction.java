package dev.afterburn.runtime;

/**
 * A typed JSON function that also sees its request: the decoded body and the {@link Request}
 * (its id, deadline, cancellation, headers, query) in, a value to encode as the response body
 * out. See {@link AfterBurn#serveJson(com.fasterxml.jackson.databind.ObjectMapper, Class, JsonRequestFunction)}.
 *
 * <pre>{@code
 * AfterBurn.serveJson(mapper, Order.class, (order, request) -> {
 *     if (request.timeRemaining().compareTo(Duration.ofMillis(50)) < 0) throw new TimeoutException("no time left");
 *     request.log("pricing " + order.lineItems().size() + " items");
 *     return pricing.quote(order, request.headers().first("Accept-Language"));
 * });
 * }</pre>
 *
 * @param <I> the request body type
 * @param <O> the response body type
 */
@FunctionalInterface
public interface JsonRequestFunction<I, O> {
    /**
     * Computes the response value.
     *
     * @param input the decoded request body
     * @param request the request it came in (its body is already read)
     * @return the value to encode as JSON; null encodes as {@code null}
     * @throws Exception any failure, answered 500 {@code handler_error}
     */
    O apply(I input, Request request) throws Exception;
}
