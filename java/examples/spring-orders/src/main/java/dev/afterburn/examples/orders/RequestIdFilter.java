package dev.afterburn.examples.orders;

import jakarta.servlet.FilterChain;
import jakarta.servlet.ServletException;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.util.UUID;
import org.springframework.stereotype.Component;
import org.springframework.web.filter.OncePerRequestFilter;

/**
 * A servlet filter: every response carries {@code X-Served-By} and an {@code X-Order-Trace},
 * the caller's {@code X-Request-Id} when it sent one. Under the watchdog the request id is
 * also the servlet request's own ({@code getRequestId()}, PROTOCOL.md §5.1); on Tomcat it is
 * Tomcat's counter, so the filter prefers the header.
 */
@Component
public class RequestIdFilter extends OncePerRequestFilter {
    @Override
    protected void doFilterInternal(HttpServletRequest request, HttpServletResponse response, FilterChain chain)
            throws ServletException, IOException {
        String id = request.getHeader("X-Request-Id");
        response.setHeader("X-Order-Trace", id != null ? id : UUID.randomUUID().toString());
        response.setHeader("X-Served-By", request.getServletContext().getServerInfo());
        chain.doFilter(request, response);
    }
}
