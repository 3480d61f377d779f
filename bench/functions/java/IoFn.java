import dev.afterburn.runtime.AfterBurn;
import dev.afterburn.runtime.Response;
import java.nio.charset.StandardCharsets;

/**
 * The Java function of the lanes scenario (bench/README.md, "Lanes"): GET /io waits 50 ms, as
 * a handler waiting on a database or another service does, and answers 1 KiB. It sleeps on its
 * lane's thread, so with lanes one JVM's requests wait together. Any other request gets the
 * greeting of every benchmark function. The handler keeps no state: it is called from every
 * lane's thread at once (java/README.md, "Lanes").
 */
public final class IoFn {
    private static final byte[] GREETING = "Hello, world!\n".getBytes(StandardCharsets.US_ASCII);
    private static final byte[] KIB = "abcdefghijklmnop".repeat(64).getBytes(StandardCharsets.US_ASCII);

    public static void main(String[] args) {
        AfterBurn.serve(request -> {
            Response response = Response.ok().header("Content-Type", "text/plain");
            if (!request.path().equals("/io")) {
                return response.body(GREETING);
            }
            Thread.sleep(50);
            return response.body(KIB);
        });
    }
}
