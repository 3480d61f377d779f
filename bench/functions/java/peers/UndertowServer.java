import io.undertow.Undertow;
import io.undertow.util.Headers;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;

/**
 * Undertow, a peer of the benchmarks (bench/README.md, "Peers"), on 127.0.0.1:$PORT: the core
 * server with one non-blocking handler, run on its I/O threads (Undertow's defaults: as many
 * I/O threads as CPUs the JVM sees, at least two; TCP_NODELAY on). The body is read whole with
 * the request's receiver; an empty one gets the greeting, any other is answered back.
 */
public final class UndertowServer {
    private static final byte[] GREETING = "Hello, world!\n".getBytes(StandardCharsets.US_ASCII);

    public static void main(String[] args) {
        int port = Integer.parseInt(System.getenv().getOrDefault("PORT", "8080"));
        Undertow server = Undertow.builder()
                .addHttpListener(port, "127.0.0.1")
                .setHandler(exchange -> exchange.getRequestReceiver().receiveFullBytes((ex, body) -> {
                    byte[] out = body.length == 0 ? GREETING : body;
                    ex.getResponseHeaders().put(Headers.CONTENT_TYPE, "text/plain");
                    ex.getResponseSender().send(ByteBuffer.wrap(out));
                }))
                .build();
        server.start();
        System.err.println("server: listening on 127.0.0.1:" + port);
    }
}
