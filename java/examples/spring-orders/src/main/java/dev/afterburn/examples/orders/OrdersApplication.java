package dev.afterburn.examples.orders;

import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;

/**
 * An ordinary Spring Boot 3.5 MVC application: nothing in it knows about AfterBurn. With
 * {@code afterburn-spring-boot-starter} on its class path it serves from the watchdog's pipes
 * when the watchdog starts it, and on port 8080 (Tomcat) when started on its own.
 *
 * <pre>
 * java -jar target/orders.jar                                   # Tomcat on :8080
 * afterburn-watchdog -port 8080 -- java -jar target/orders.jar  # the watchdog on :8080, workers on pipes
 * </pre>
 */
@SpringBootApplication
public class OrdersApplication {
    public static void main(String[] args) {
        SpringApplication.run(OrdersApplication.class, args);
    }
}
