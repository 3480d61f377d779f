import java.io.FileInputStream;
import java.io.FileOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;

/**
 * The cold-start baseline for Java: a worker that answers the AfterBurn handshake
 * (PROTOCOL.md §3.2) with canned bytes on the descriptors named by AFTERBURN_FDS, loading
 * nothing of the library.
 */
public final class NoLib {
    public static void main(String[] args) throws IOException {
        String[] fds = System.getenv().getOrDefault("AFTERBURN_FDS", "0,1").split(",");
        try (FileInputStream in = new FileInputStream("/dev/fd/" + fds[0]);
             FileOutputStream out = new FileOutputStream("/dev/fd/" + fds[1])) {
            byte[] buf = new byte[4096];
            StringBuilder got = new StringBuilder();
            while (got.indexOf("\r\n\r\n") < 0) {
                int n = in.read(buf);
                if (n < 0) {
                    return;
                }
                got.append(new String(buf, 0, n, StandardCharsets.ISO_8859_1));
            }
            out.write(("HTTP/1.1 200 OK\r\nAfterBurn-Protocol: 1\r\n"
                    + "AfterBurn-Library: bench-nolib/0\r\nContent-Length: 0\r\n\r\n").getBytes(StandardCharsets.ISO_8859_1));
            out.flush();
            while (in.read(buf) >= 0) {
                // until the watchdog closes the pipe (PROTOCOL.md §9.4)
            }
        }
    }
}
