package dev.afterburn.runtime;

/**
 * A typed JSON function: a decoded request body in, a value to encode as the response body
 * out. See {@link AfterBurn#serveJson(Class, JsonFunction)}.
 *
 * @param <I> the request body type
 * @param <O> the response body type
 */
@FunctionalInterface
public interface JsonFunction<I, O> {
    /**
     * Computes the response value.
     *
     * @param input the decoded request body
     * @return the value to encode as JSON; null encodes as {@code null}
     * @throws Exception any failure, answered 500 {@code handler_error}
     */
    O apply(I input) throws Exception;
}
