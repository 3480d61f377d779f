package dev.afterburn.servlet;

import dev.afterburn.runtime.Request;
import jakarta.servlet.ServletRequest;
import java.time.Instant;
import java.util.function.BooleanSupplier;

/**
 * What AfterBurn knows about a request beyond HTTP, as request attributes that any servlet,
 * filter or framework can read without depending on this module's classes:
 *
 * <table>
 * <caption>request attributes</caption>
 * <tr><th>name</th><th>type</th><th>value</th></tr>
 * <tr><td>{@value #REQUEST}</td><td>{@link Request}</td><td>the runtime's request: {@code timeRemaining()}, {@code cancelled()}, {@code log(text)}</td></tr>
 * <tr><td>{@value #REQUEST_ID}</td><td>{@link String}</td><td>the request id (PROTOCOL.md §5.1), also {@code ServletRequest.getRequestId()}</td></tr>
 * <tr><td>{@value #DEADLINE}</td><td>{@link Instant}</td><td>the deadline on the wall clock (§5.2), absent when the watchdog set none</td></tr>
 * <tr><td>{@value #CANCELLED}</td><td>{@link BooleanSupplier}</td><td>whether the exchange was cancelled (its deadline passed; §2.5)</td></tr>
 * </table>
 *
 * <pre>{@code
 * String id = (String) request.getAttribute(AfterBurnRequest.REQUEST_ID);
 * Duration left = AfterBurnRequest.of(request).timeRemaining();
 * }</pre>
 */
public final class AfterBurnRequest {
    private AfterBurnRequest() {}

    /** The runtime's {@link Request}. */
    public static final String REQUEST = "dev.afterburn.runtime.Request";
    /** The request id, a {@link String}. */
    public static final String REQUEST_ID = "dev.afterburn.request_id";
    /** The deadline, an {@link Instant}; absent without one. */
    public static final String DEADLINE = "dev.afterburn.deadline";
    /** Whether the exchange was cancelled, a {@link BooleanSupplier}. */
    public static final String CANCELLED = "dev.afterburn.cancelled";

    /**
     * The runtime's request behind a servlet request (also through wrappers, which pass
     * attributes on).
     *
     * @param request a request served by this module
     * @return the AfterBurn request
     * @throws IllegalArgumentException when the request was not served by AfterBurn
     */
    public static Request of(ServletRequest request) {
        Object r = request.getAttribute(REQUEST);
        if (!(r instanceof Request)) {
            throw new IllegalArgumentException("afterburn-servlet: " + request + " was not served by AfterBurn (no attribute " + REQUEST + ")");
        }
        return (Request) r;
    }
}
