package dev.afterburn.spring.boot;

import jakarta.servlet.Servlet;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnWebApplication;
import org.springframework.boot.autoconfigure.web.servlet.ServletWebServerFactoryAutoConfiguration;
import org.springframework.boot.web.servlet.server.ServletWebServerFactory;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Conditional;

/**
 * Under the AfterBurn watchdog, the servlet web server is the watchdog's pipe: this
 * configuration comes before Spring Boot's own ({@code ServletWebServerFactoryAutoConfiguration},
 * which picks Tomcat, Jetty or Undertow only when no {@link ServletWebServerFactory} exists).
 * Elsewhere it does nothing and the application serves on its port as usual.
 *
 * <p>Settings: {@code afterburn.enabled} ({@code true}/{@code false}; by default, whether
 * {@code AFTERBURN_FDS} or {@code AFTERBURN_PROTOCOL} is set), {@code afterburn.max-lanes}
 * (the most lanes served, PROTOCOL.md §2.5; by default the runtime's, 256), {@code afterburn.serve}
 * ({@code false} sets the server up without serving the pipes, for tests that call
 * {@code AfterBurnWebServer.container().handler()} in-process), {@code afterburn.warmup}
 * (paths to GET through the application before the handshake, comma-separated).
 */
@AutoConfiguration(before = ServletWebServerFactoryAutoConfiguration.class)
@ConditionalOnWebApplication(type = ConditionalOnWebApplication.Type.SERVLET)
@ConditionalOnClass(Servlet.class)
@Conditional(OnWatchdogCondition.class)
public class AfterBurnAutoConfiguration {
    /** @return the factory of the server that never listens */
    @Bean
    @ConditionalOnMissingBean(ServletWebServerFactory.class)
    public AfterBurnServletWebServerFactory afterBurnServletWebServerFactory() {
        return new AfterBurnServletWebServerFactory();
    }

    /**
     * @param maxLanes afterburn.max-lanes
     * @param serve afterburn.serve (default true)
     * @return what serves the pipes once the application is ready
     */
    @Bean
    public AfterBurnServing afterBurnServing(@Value("${afterburn.max-lanes:#{null}}") Integer maxLanes,
                                             @Value("${afterburn.serve:true}") boolean serve,
                                             @Value("${afterburn.warmup:}") java.util.List<String> warmup) {
        return new AfterBurnServing(maxLanes, serve, warmup.stream().map(String::strip).filter(p -> !p.isEmpty()).toList());
    }
}
