import dev.afterburn.runtime.AfterBurn;
import dev.afterburn.runtime.Response;
import java.nio.charset.StandardCharsets;

/**
 * The Java benchmark function on the AfterBurn library: an empty body gets a greeting, a small
 * body is answered back whole, a large one is streamed back as it arrives (so a 100 MiB echo
 * holds only the library's read buffers in memory).
 */
public final class AfterBurnFn {
    private static final byte[] GREETING = "Hello, world!\n".getBytes(StandardCharsets.US_ASCII);
    private static final long WHOLE_BODY_MAX = 1 << 20;

    public static void main(String[] args) {
        AfterBurn.serve(request -> {
            String declared = request.headers().first("content-length");
            long length = declared == null ? 0 : Long.parseLong(declared);
            Response response = Response.ok().header("Content-Type", "text/plain");
            if (length == 0) {
                return response.body(GREETING);
            }
            if (length <= WHOLE_BODY_MAX) {
                return response.body(request.bodyBytes());
            }
            // The length is known, so it is declared, as the Go function does: the body goes
            // out as it arrives without chunk framing.
            return response.header("Content-Length", declared).stream(out -> request.body().transferTo(out));
        });
    }
}
