import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.util.concurrent.Executors;

/**
 * The JDK's own minimal HTTP server, the upstream of the "HTTP proxy mode" baseline, on
 * 127.0.0.1:$PORT. Run it with -Dsun.net.httpserver.nodelay=true: without it every response
 * waits ~40 ms for a delayed ACK and the comparison is a sham.
 */
public final class Server {
    private static final byte[] GREETING = "Hello, world!\n".getBytes();

    public static void main(String[] args) throws IOException {
        int port = Integer.parseInt(System.getenv().getOrDefault("PORT", "8080"));
        HttpServer server = HttpServer.create(new InetSocketAddress("127.0.0.1", port), 128);
        server.setExecutor(Executors.newFixedThreadPool(Runtime.getRuntime().availableProcessors()));
        server.createContext("/", exchange -> {
            byte[] body;
            try (InputStream in = exchange.getRequestBody()) {
                body = in.readAllBytes();
            }
            if (body.length == 0) {
                body = GREETING;
            }
            exchange.getResponseHeaders().set("Content-Type", "text/plain");
            exchange.sendResponseHeaders(200, body.length);
            try (OutputStream out = exchange.getResponseBody()) {
                out.write(body);
            }
        });
        server.start();
        InetSocketAddress a = server.getAddress();
        System.err.println("server: listening on " + a.getHostString() + ":" + a.getPort());
    }
}
