package dev.afterburn.examples.orders;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

/** The application on its own: the starter sees no watchdog and Spring Boot starts Tomcat. */
class OnTomcatIT extends OrdersHttp {
    private static Server server;

    @BeforeAll
    static void start() throws Exception {
        server = Server.tomcat();
    }

    @AfterAll
    static void stop() throws Exception {
        if (server != null) server.close();
    }

    @Override
    Server server() {
        return server;
    }
}
