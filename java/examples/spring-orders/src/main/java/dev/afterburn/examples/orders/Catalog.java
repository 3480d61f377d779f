package dev.afterburn.examples.orders;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.TreeMap;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.core.io.Resource;
import org.springframework.stereotype.Component;

/**
 * Prices in cents by product, loaded once at start-up from {@code orders.catalog} (a CSV of
 * {@code product,cents}). A catalog that cannot be read fails the application's start: under
 * the watchdog that is an initialisation failure (PROTOCOL.md §9.1), never a worker answering
 * errors.
 */
@Component
public class Catalog {
    private final Map<String, Long> cents = new TreeMap<>();

    public Catalog(@Value("${orders.catalog:classpath:catalog.csv}") Resource source) throws IOException {
        if (!source.exists()) throw new IllegalStateException("orders: the catalog " + source.getDescription() + " does not exist");
        try (BufferedReader r = new BufferedReader(new InputStreamReader(source.getInputStream(), StandardCharsets.UTF_8))) {
            for (String line; (line = r.readLine()) != null; ) {
                if (line.isBlank()) continue;
                String[] f = line.split(",");
                cents.put(f[0].strip(), Long.parseLong(f[1].strip()));
            }
        }
    }

    /** @return the price in cents, or null for an unknown product */
    public Long price(String product) {
        return cents.get(product);
    }
}
