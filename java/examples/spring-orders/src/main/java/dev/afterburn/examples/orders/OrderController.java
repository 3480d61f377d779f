package dev.afterburn.examples.orders;

import jakarta.validation.Valid;
import jakarta.validation.constraints.Min;
import jakarta.validation.constraints.NotBlank;
import jakarta.validation.constraints.NotEmpty;
import jakarta.validation.constraints.Size;
import java.net.URI;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import org.springframework.http.MediaType;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.PathVariable;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestBody;
import org.springframework.web.bind.annotation.RequestMapping;
import org.springframework.web.bind.annotation.RequestParam;
import org.springframework.web.bind.annotation.RestController;
import org.springframework.web.multipart.MultipartFile;

/** Orders as JSON: create (validated), read; and the benchmark's hello and echo at {@code /}. */
@RestController
public class OrderController {
    public record Line(@NotBlank String product, @Min(1) int quantity) {}

    public record OrderRequest(@NotBlank @Size(max = 100) String customer, @NotEmpty List<@Valid Line> lines) {}

    public record Order(long id, String customer, List<Line> lines, long totalCents) {}

    private final Catalog catalog;
    private final Map<Long, Order> orders = new ConcurrentHashMap<>();
    private final AtomicLong ids = new AtomicLong();

    public OrderController(Catalog catalog) {
        this.catalog = catalog;
    }

    @PostMapping("/orders")
    public ResponseEntity<Order> create(@Valid @RequestBody OrderRequest request) {
        long total = 0;
        for (Line l : request.lines()) {
            Long price = catalog.price(l.product());
            if (price == null) throw new UnknownProductException(l.product());
            total += price * l.quantity();
        }
        Order o = new Order(ids.incrementAndGet(), request.customer(), request.lines(), total);
        orders.put(o.id(), o);
        return ResponseEntity.created(URI.create("/orders/" + o.id())).body(o);
    }

    @GetMapping("/orders/{id}")
    public Order get(@PathVariable long id) {
        Order o = orders.get(id);
        if (o == null) throw new OrderNotFoundException(id);
        return o;
    }

    /** A CSV of {@code product,quantity} lines uploaded as a form's file: priced, not stored. */
    @PostMapping(path = "/orders/quote-file", consumes = MediaType.MULTIPART_FORM_DATA_VALUE)
    public Map<String, Object> quoteFile(@RequestParam("customer") String customer, @RequestParam("file") MultipartFile file)
            throws java.io.IOException {
        long total = 0;
        int lines = 0;
        for (String line : new String(file.getBytes(), java.nio.charset.StandardCharsets.UTF_8).split("\\R")) {
            if (line.isBlank()) continue;
            String[] f = line.split(",");
            Long price = catalog.price(f[0].strip());
            if (price == null) throw new UnknownProductException(f[0].strip());
            total += price * Integer.parseInt(f[1].strip());
            lines++;
        }
        return Map.of("customer", customer, "file", String.valueOf(file.getOriginalFilename()), "lines", lines, "totalCents", total);
    }

    /** The benchmark's hello workload: a GET answered with a 14-byte greeting. */
    @GetMapping(path = "/", produces = MediaType.TEXT_PLAIN_VALUE)
    public String hello() {
        return "Hello, world!\n";
    }

    /** The benchmark's echo workload: a POST answered with its body. */
    @PostMapping(path = "/")
    public ResponseEntity<byte[]> echo(@RequestBody(required = false) byte[] body) {
        if (body == null || body.length == 0) return ResponseEntity.ok().contentType(MediaType.TEXT_PLAIN).body("Hello, world!\n".getBytes());
        return ResponseEntity.ok().contentType(MediaType.APPLICATION_OCTET_STREAM).body(body);
    }

    /** An order that does not exist: 404 through {@link ApiErrors}. */
    public static final class OrderNotFoundException extends RuntimeException {
        private static final long serialVersionUID = 1L;

        OrderNotFoundException(long id) {
            super("no order " + id);
        }
    }

    /** A product not in the catalog: 422 through {@link ApiErrors}. */
    public static final class UnknownProductException extends RuntimeException {
        private static final long serialVersionUID = 1L;

        UnknownProductException(String product) {
            super("unknown product " + product);
        }
    }

    /** Not mapped to anything: an exception that escapes the application (500). */
    @GetMapping("/orders/fail")
    public Order fail() {
        throw new IllegalStateException("the order database is down");
    }

    @RequestMapping("/orders/ping")
    public Map<String, String> ping() {
        return Map.of("pong", "yes");
    }
}
