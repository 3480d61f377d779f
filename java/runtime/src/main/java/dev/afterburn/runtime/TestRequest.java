package dev.afterburn.runtime;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.buffer.UnpooledByteBufAllocator;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.handler.codec.http.DefaultFullHttpRequest;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.HttpClientCodec;
import io.netty.handler.codec.http.HttpContent;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpResponse;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.handler.codec.http.LastHttpContent;
import io.netty.util.ReferenceCountUtil;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * Calls a handler in-process, without a watchdog, to unit-test functions. The request goes
 * through the same library path as under the watchdog — HTTP/1.1 bytes, the strict parser,
 * the handler, the response encoder — so what the test sees is what a client would get,
 * handler errors included.
 *
 * <pre>{@code
 * TestResponse r = TestRequest.post("/quote")
 *         .header("Content-Type", "application/json")
 *         .body("{\"item\":\"tea\",\"quantity\":2}")
 *         .call(AfterBurn.jsonHandler(mapper, Order.class, Quotes::price));
 * assertEquals(200, r.status());
 * assertEquals("{\"item\":\"tea\",\"cents\":500}", r.bodyText());
 * }</pre>
 */
public final class TestRequest {
    private final String method;
    private final String target;
    private final List<Headers.Field> fields = new ArrayList<>();
    private final List<Headers.Field> trailers = new ArrayList<>();
    private byte[] body = new byte[0];
    private String requestId = "test-request";
    private Duration timeout;

    private TestRequest(String method, String target) {
        this.method = method;
        this.target = target;
    }

    /**
     * A request with any method.
     *
     * @param method the method, such as {@code PUT}
     * @param target the request-target, such as {@code /orders?dry=1}
     * @return the request
     */
    public static TestRequest of(String method, String target) {
        return new TestRequest(method, target);
    }

    /**
     * @param target the request-target
     * @return a {@code GET} request
     */
    public static TestRequest get(String target) {
        return of("GET", target);
    }

    /**
     * @param target the request-target
     * @return a {@code POST} request
     */
    public static TestRequest post(String target) {
        return of("POST", target);
    }

    /**
     * Adds a field line.
     *
     * @param name the name
     * @param value the value
     * @return this request
     */
    public TestRequest header(String name, String value) {
        fields.add(new Headers.Field(name, value));
        return this;
    }

    /**
     * Adds a trailer field line; a request with trailers sends its body chunked, one chunk
     * and the trailer section (PROTOCOL.md §4.2), as the watchdog forwards a client's.
     *
     * @param name the name
     * @param value the value
     * @return this request
     */
    public TestRequest trailer(String name, String value) {
        trailers.add(new Headers.Field(name, value));
        return this;
    }

    /**
     * @param bytes the body, sent with {@code Content-Length} (chunked when there are trailers)
     * @return this request
     */
    public TestRequest body(byte[] bytes) {
        this.body = bytes.clone();
        return this;
    }

    /**
     * @param text the body, as UTF-8
     * @return this request
     */
    public TestRequest body(String text) {
        return body(text.getBytes(StandardCharsets.UTF_8));
    }

    /**
     * @param id the request id the handler sees (default {@code test-request})
     * @return this request
     */
    public TestRequest requestId(String id) {
        this.requestId = id;
        return this;
    }

    /**
     * @param timeout the deadline the handler sees, as the watchdog's AfterBurn-Timeout-Ms
     * @return this request
     */
    public TestRequest timeout(Duration timeout) {
        this.timeout = timeout;
        return this;
    }

    /**
     * Runs the handler on this request and returns its response. Handler exceptions are
     * answered as under the watchdog ({@code 500}, stack on stderr).
     *
     * @param handler the function under test
     * @return the response
     */
    public TestResponse call(Handler handler) {
        EmbeddedChannel client = new EmbeddedChannel(new HttpClientCodec());
        client.config().setAllocator(new UnpooledByteBufAllocator(false));
        try {
            ByteArrayOutputStream requestBytes = new ByteArrayOutputStream();
            client.writeOutbound(request());
            for (ByteBuf b; (b = client.readOutbound()) != null; ) {
                requestBytes.writeBytes(io.netty.buffer.ByteBufUtil.getBytes(b));
                b.release();
            }
            ByteArrayOutputStream responseBytes = new ByteArrayOutputStream();
            Worker worker = new Worker(new ByteArrayInputStream(requestBytes.toByteArray()), responseBytes,
                    Limits.DEFAULT, new FileOutputStream(FileDescriptor.err));
            Worker.Outcome outcome = worker.serve(handler);
            client.writeInbound(Unpooled.wrappedBuffer(responseBytes.toByteArray()));
            return response(client, outcome);
        } finally {
            client.finishAndReleaseAll();
        }
    }

    private FullHttpRequest request() {
        FullHttpRequest r = new DefaultFullHttpRequest(HttpVersion.HTTP_1_1, HttpMethod.valueOf(method), target,
                Unpooled.wrappedBuffer(body));
        boolean host = false;
        for (Headers.Field f : fields) {
            host |= f.name().equalsIgnoreCase("Host");
            r.headers().add(f.name(), f.value());
        }
        if (!host) r.headers().add("Host", "test");
        r.headers().set("AfterBurn-Request-Id", requestId);
        if (timeout != null) r.headers().set("AfterBurn-Timeout-Ms", Long.toString(Math.max(timeout.toMillis(), 0)));
        if (trailers.isEmpty()) {
            r.headers().set("Content-Length", body.length);
        } else {
            r.headers().set("Transfer-Encoding", "chunked");
            for (Headers.Field f : trailers) r.trailingHeaders().add(f.name(), f.value());
        }
        return r;
    }

    private static TestResponse response(EmbeddedChannel client, Worker.Outcome outcome) {
        int status = -1;
        List<Headers.Field> headers = new ArrayList<>();
        ByteArrayOutputStream body = new ByteArrayOutputStream();
        List<Headers.Field> trailers = new ArrayList<>();
        boolean complete = false;
        for (Object m; (m = client.readInbound()) != null; ) {
            try {
                if (m instanceof HttpResponse) {
                    HttpResponse r = (HttpResponse) m;
                    status = r.status().code();
                    for (Map.Entry<String, String> e : r.headers()) headers.add(new Headers.Field(e.getKey(), e.getValue()));
                }
                if (m instanceof HttpContent) {
                    HttpContent c = (HttpContent) m;
                    if (c.decoderResult().isFailure()) continue;
                    body.writeBytes(io.netty.buffer.ByteBufUtil.getBytes(c.content()));
                    if (m instanceof LastHttpContent) {
                        complete = true;
                        for (Map.Entry<String, String> e : ((LastHttpContent) m).trailingHeaders()) {
                            trailers.add(new Headers.Field(e.getKey(), e.getValue()));
                        }
                    }
                }
            } finally {
                ReferenceCountUtil.release(m);
            }
        }
        return new TestResponse(status, new Headers(headers), body.toByteArray(), new Headers(trailers),
                complete && outcome == Worker.Outcome.CLOSED);
    }
}
