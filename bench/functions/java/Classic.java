import java.io.IOException;

/**
 * The Java function of the "fork per request" baseline: a classic-watchdog function that reads
 * the request body on stdin and writes the response body to stdout, started once per request
 * (a whole JVM start each time). Empty body: a greeting; otherwise the body echoed.
 */
public final class Classic {
    public static void main(String[] args) throws IOException {
        byte[] body = System.in.readAllBytes();
        System.out.write(body.length > 0 ? body : "Hello, world!\n".getBytes());
        System.out.flush();
    }
}
