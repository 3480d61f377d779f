package dev.afterburn.runtime;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The core beyond the shared vectors: event order, pipelining and limits at their edges. */
class RequestDecoderTest {
    private static List<RequestEvent> feed(Limits limits, byte[]... reads) {
        RequestDecoder core = new RequestDecoder(limits);
        for (byte[] r : reads) core.feed(r, 0, r.length);
        List<RequestEvent> events = new ArrayList<>();
        for (RequestEvent e; (e = core.poll()) != null; ) events.add(e);
        return events;
    }

    private static byte[] ascii(String s) {
        return s.getBytes(StandardCharsets.ISO_8859_1);
    }

    @Test
    void aLargeBodyPipelinedBehindABodilessRequestIsNotMistakenForAnOverlongHead() {
        byte[] body = new byte[1 << 20];
        Arrays.fill(body, (byte) 'x');
        byte[] heads = ascii("GET /1 HTTP/1.1\r\nHost: a\r\n\r\nPOST /2 HTTP/1.1\r\nHost: a\r\nContent-Length: " + body.length + "\r\n\r\n");
        byte[] all = new byte[heads.length + body.length];
        System.arraycopy(heads, 0, all, 0, heads.length);
        System.arraycopy(body, 0, all, heads.length, body.length);
        List<RequestEvent> events = feed(new Limits(2048, 0), all);
        long bodyBytes = 0;
        int heads2 = 0;
        for (RequestEvent e : events) {
            if (e instanceof RequestEvent.Failure) throw new AssertionError("rejected: " + ((RequestEvent.Failure) e).error().detail());
            if (e instanceof RequestEvent.Head) heads2++;
            if (e instanceof RequestEvent.Content) bodyBytes += ((RequestEvent.Content) e).bytes().length;
        }
        assertEquals(2, heads2);
        assertEquals(body.length, bodyBytes);
    }

    @Test
    void eventsComeInStreamOrderAndBodiesArriveInPieces() {
        List<RequestEvent> events = feed(Limits.DEFAULT,
                ascii("POST /a HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nab"),
                ascii("c\r\n0\r\nX-T: 1\r\n\r\nGET /b HTTP/1.1\r\nHost: a\r\n\r\n"));
        assertInstanceOf(RequestEvent.Head.class, events.get(0));
        assertEquals("ab", new String(((RequestEvent.Content) events.get(1)).bytes(), StandardCharsets.US_ASCII));
        assertEquals("c", new String(((RequestEvent.Content) events.get(2)).bytes(), StandardCharsets.US_ASCII));
        assertEquals("1", ((RequestEvent.End) events.get(3)).trailers().first("x-t"));
        assertEquals("/b", ((RequestEvent.Head) events.get(4)).target());
        assertInstanceOf(RequestEvent.End.class, events.get(5));
        assertEquals(6, events.size());
    }

    @Test
    void aHeadThatCannotEndWithinTheLimitIsRefusedBeforeItsLineEnds() {
        // maxHead 64: request line 16 + Host 9 = 25 bytes; 39 more bytes without an LF
        // cannot end within 64.
        String head = "GET / HTTP/1.1\r\nHost: a\r\nX-Pad: " + "p".repeat(32);
        List<RequestEvent> events = feed(new Limits(64, 0), ascii(head));
        RequestEvent.Failure f = assertInstanceOf(RequestEvent.Failure.class, events.get(0));
        assertEquals(431, f.error().status);
    }

    @Test
    void aHeadExactlyAtTheLimitIsAccepted() {
        String head = "GET / HTTP/1.1\r\nHost: a\r\nX-Pad: " + "p".repeat(30) + "\r\n\r\n"; // 64 bytes without the empty line
        List<RequestEvent> events = feed(new Limits(64, 0), ascii(head));
        assertInstanceOf(RequestEvent.Head.class, events.get(0));
        List<RequestEvent> over = feed(new Limits(64, 0), ascii(head.replace("X-Pad: ", "X-Pad: p")));
        assertEquals(431, assertInstanceOf(RequestEvent.Failure.class, over.get(0)).error().status);
    }

    @Test
    void theFailureCarriesTheRequestIdWhenTheHeadNamedItFirst() {
        List<RequestEvent> events = feed(Limits.DEFAULT, ascii("GET / HTTP/1.1\r\nAfterBurn-Request-Id: rid-9\r\nHost: a\r\nHost: b\r\n\r\n"));
        RequestEvent.Failure f = assertInstanceOf(RequestEvent.Failure.class, events.get(0));
        assertEquals("rid-9", f.requestId());
        assertEquals(1, events.size());
    }

    @Test
    void endOfInputBetweenRequestsIsClosedAndInsideOneIsAFailure() {
        RequestDecoder between = new RequestDecoder(Limits.DEFAULT);
        byte[] get = ascii("GET / HTTP/1.1\r\nHost: a\r\n\r\n");
        between.feed(get, 0, get.length);
        between.endOfInput();
        assertInstanceOf(RequestEvent.Head.class, between.poll());
        assertInstanceOf(RequestEvent.End.class, between.poll());
        assertInstanceOf(RequestEvent.Closed.class, between.poll());
        assertNull(between.poll());

        RequestDecoder inside = new RequestDecoder(Limits.DEFAULT);
        byte[] partial = ascii("GET / HTTP/1.1\r\nHo");
        inside.feed(partial, 0, partial.length);
        inside.endOfInput();
        RequestEvent.Failure f = assertInstanceOf(RequestEvent.Failure.class, inside.poll());
        assertEquals(400, f.error().status);
    }

    @Test
    void aTrailerSectionExactlyAtTheHeaderLimitIsAcceptedAndOneByteMoreIsNot() {
        String body = "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nx\r\n0\r\n";
        String atLimit = "X-T: " + "v".repeat(57) + "\r\n\r\n"; // 64 bytes without the empty line
        List<RequestEvent> exact = feed(new Limits(64, 0), ascii(body + atLimit));
        RequestEvent.End end = assertInstanceOf(RequestEvent.End.class, exact.get(exact.size() - 1));
        assertEquals("v".repeat(57), end.trailers().first("x-t"));
        List<RequestEvent> over = feed(new Limits(64, 0), ascii(body + "X-T: " + "v".repeat(58) + "\r\n\r\n"));
        RequestEvent.Failure f = assertInstanceOf(RequestEvent.Failure.class, over.get(over.size() - 1));
        assertEquals(400, f.error().status);
    }

    /**
     * Found by ParserPropertyTest (case 346 once the exchange vectors joined its corpus): a
     * fault in the line after a bodiless request, in the same read, dropped that request,
     * which one read per line served. §4.3: the first fault in byte order is answered.
     */
    @Test
    void aFaultInTheNextHeadInTheSameReadDoesNotDropTheBodilessRequestBeforeIt() {
        byte[] get = ascii("GET /a HTTP/1.1\r\nHost: a\r\nAfterBurn-Exchange: t1\r\n\r\n");
        byte[] overlong = ascii("x".repeat(200));
        for (List<RequestEvent> events : List.of(feed(new Limits(100, 0), concat(get, overlong)),
                feed(new Limits(100, 0), get, overlong))) {
            assertEquals("/a", assertInstanceOf(RequestEvent.Head.class, events.get(0)).target());
            assertInstanceOf(RequestEvent.End.class, events.get(1));
            RequestEvent.Failure f = assertInstanceOf(RequestEvent.Failure.class, events.get(2));
            assertEquals(431, f.error().status);
            assertNull(f.exchange(), "§4.6: the token of the request served is not the failure's");
            assertEquals(3, events.size());
        }
    }

    private static byte[] concat(byte[] a, byte[] b) {
        byte[] all = Arrays.copyOf(a, a.length + b.length);
        System.arraycopy(b, 0, all, a.length, b.length);
        return all;
    }
}
