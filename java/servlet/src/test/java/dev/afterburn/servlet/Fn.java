package dev.afterburn.servlet;

import jakarta.servlet.Filter;
import jakarta.servlet.FilterChain;
import jakarta.servlet.ServletException;
import jakarta.servlet.ServletRequest;
import jakarta.servlet.ServletResponse;
import jakarta.servlet.http.HttpServlet;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;

/** Servlets and filters from lambdas, for the tests. */
final class Fn {
    private Fn() {}

    interface Service {
        void service(HttpServletRequest req, HttpServletResponse resp) throws Exception;
    }

    interface FilterFn {
        void filter(HttpServletRequest req, HttpServletResponse resp, FilterChain chain) throws Exception;
    }

    static HttpServlet servlet(Service s) {
        return new HttpServlet() {
            private static final long serialVersionUID = 1L;

            @Override
            protected void service(HttpServletRequest req, HttpServletResponse resp) throws ServletException, IOException {
                try {
                    s.service(req, resp);
                } catch (ServletException | IOException | RuntimeException e) {
                    throw e;
                } catch (Exception e) {
                    throw new ServletException(e);
                }
            }
        };
    }

    static Filter filter(FilterFn f) {
        return (ServletRequest req, ServletResponse resp, FilterChain chain) -> {
            try {
                f.filter((HttpServletRequest) req, (HttpServletResponse) resp, chain);
            } catch (ServletException | IOException | RuntimeException e) {
                throw e;
            } catch (Exception e) {
                throw new ServletException(e);
            }
        };
    }
}
