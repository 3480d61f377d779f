package com.openfaas.function;

import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;

/**
 * The application. Under the watchdog each worker runs main once: what the context
 * initialises (beans, pools, caches) is initialised once per worker, then serves request after
 * request. Without the watchdog it serves on port 8080 as any Spring Boot application.
 */
@SpringBootApplication
public class Application {
    public static void main(String[] args) {
        SpringApplication.run(Application.class, args);
    }
}
