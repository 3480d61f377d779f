package dev.afterburn.spring.boot;

import dev.afterburn.servlet.ServletContainer;
import jakarta.servlet.ServletContext;
import jakarta.servlet.ServletException;
import org.springframework.boot.web.server.ErrorPage;
import org.springframework.boot.web.server.MimeMappings;
import org.springframework.boot.web.server.WebServer;
import org.springframework.boot.web.server.WebServerException;
import org.springframework.boot.web.servlet.ServletContextInitializer;
import org.springframework.boot.web.servlet.server.AbstractServletWebServerFactory;

/**
 * Spring Boot's extension point for its embedded server, filled with the AfterBurn servlet
 * container: the application's {@code ServletContextInitializer}s (its DispatcherServlet,
 * filters, listeners) register into the container's {@code ServletContext}; {@code server.*}
 * settings that mean something without a socket apply (context path, error pages, session
 * timeout and cookie, MIME mappings, init parameters); those of a
 * socket (port, address, SSL, HTTP/2, compression, the server header) are the watchdog's.
 *
 * <p>Every servlet is initialised here, before the handshake, including the DispatcherServlet
 * that Spring Boot otherwise initialises on the first request. Error pages for exception types
 * are not used: an exception that escapes the application is the handler's failure and gets
 * the protocol's {@code 500 handler_error} (PROTOCOL.md §8.3).
 */
public class AfterBurnServletWebServerFactory extends AbstractServletWebServerFactory {
    @Override
    public WebServer getWebServer(ServletContextInitializer... initializers) {
        ServletContainer container = ServletContainer.create(getContextPath());
        container.initialiseEveryServletAtStart(true);
        ServletContext context = container.servletContext();
        if (getSession().getTimeout() != null) {
            long minutes = getSession().getTimeout().toMinutes();
            context.setSessionTimeout((int) Math.max(minutes, getSession().getTimeout().isZero() ? 0 : 1));
        }
        for (ErrorPage page : getErrorPages()) {
            if (page.isGlobal()) container.errorPage(page.getPath());
            else if (page.getStatusCode() != 0) container.errorPage(page.getStatusCode(), page.getPath());
        }
        for (MimeMappings.Mapping m : getMimeMappings()) container.mimeType(m.getExtension(), m.getMimeType());
        try {
            for (ServletContextInitializer initializer : mergeInitializers(initializers)) initializer.onStartup(context);
            container.start();
        } catch (ServletException | RuntimeException e) {
            throw new WebServerException("AfterBurn: starting the servlet context failed", e);
        }
        return new AfterBurnWebServer(container);
    }
}
