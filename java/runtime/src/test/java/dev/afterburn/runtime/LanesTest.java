package dev.afterburn.runtime;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Lanes (PROTOCOL.md §2.5) in-process on real pipes: lanes overlap, a full response pipe holds
 * its own lane only, cancellation reaches the exchange its token names and never the lane's
 * next one, a framing error closes its lane alone, and EOF on every lane ends the worker.
 */
@Timeout(value = 60, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
class LanesTest {
    private static final ObjectMapper JSON = new ObjectMapper();

    @TempDir
    Path dir;

    static String get(String target, String... fields) {
        StringBuilder sb = new StringBuilder("GET " + target + " HTTP/1.1\r\nHost: a\r\n");
        for (String f : fields) sb.append(f).append("\r\n");
        return sb.append("\r\n").toString();
    }

    static JsonNode json(ExchangeVectorsTest.Parsed p) throws Exception {
        return JSON.readTree(p.body());
    }

    static long param(Request r, String name) {
        for (String pair : r.query().split("&")) {
            if (pair.startsWith(name + "=")) return Long.parseLong(pair.substring(name.length() + 1));
        }
        return 0;
    }

    /** Routes of the tests below; a few of the fixture contract's (conformance/README.md). */
    static Response routes(Request r, CountDownLatch started, CountDownLatch release) throws Exception {
        switch (r.path()) {
            case "/sleep":
                Thread.sleep(param(r, "ms"));
                return Response.ok().body("{\"slept_ms\":" + param(r, "ms") + "}");
            case "/large": {
                byte[] b = new byte[(int) param(r, "size")];
                return Response.ok().body(b);
            }
            case "/wait-cancel": {
                started.countDown();
                boolean interrupted = false;
                try {
                    Thread.sleep(param(r, "ms"));
                } catch (InterruptedException e) {
                    interrupted = true;
                    r.log("cancelled");
                }
                return Response.ok().body("{\"interrupted\":" + interrupted + ",\"cancelled\":" + r.cancelled() + "}");
            }
            case "/hold": {
                started.countDown();
                boolean interrupted = false;
                try {
                    release.await();
                } catch (InterruptedException e) {
                    interrupted = true;
                }
                return Response.ok().body("{\"interrupted\":" + interrupted + ",\"cancelled\":" + r.cancelled() + "}");
            }
            case "/state":
                return Response.ok().body("{\"interrupted\":" + Thread.currentThread().isInterrupted()
                        + ",\"cancelled\":" + r.cancelled() + ",\"thread\":\"" + Thread.currentThread().getName() + "\"}");
            default:
                return Response.ok().body(r.path().getBytes(StandardCharsets.US_ASCII));
        }
    }

    @Test
    void fourSleepingRequestsOnFourLanesFinishTogether() throws Exception {
        try (LaneRig rig = new LaneRig(dir, 4, r -> routes(r, null, null))) {
            long start = System.nanoTime();
            for (int n = 1; n <= 4; n++) rig.send(n, get("/sleep?ms=500", "AfterBurn-Exchange: t" + n));
            for (int n = 1; n <= 4; n++) {
                ExchangeVectorsTest.Parsed p = rig.response(n);
                assertEquals(200, p.status());
                assertEquals("t" + n, ResponseReader.first(p.headers(), "afterburn-exchange"), "lane " + n + ": its own token");
            }
            long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
            assertTrue(ms < 1500, "four 500 ms handlers on four lanes took " + ms + " ms: the lanes did not overlap");
            assertEquals(Worker.Outcome.CLOSED, rig.finish());
        }
    }

    @Test
    void aResponsePipeNobodyReadsHoldsItsOwnLaneOnly() throws Exception {
        try (LaneRig rig = new LaneRig(dir, 2, r -> routes(r, null, null))) {
            // 4 MiB into a 64 KiB pipe that the test does not read: lane 1's thread blocks writing.
            rig.send(1, get("/large?size=4194304"));
            rig.send(2, get("/two"));
            ExchangeVectorsTest.Parsed p = rig.response(2);
            assertEquals("/two", new String(p.body(), StandardCharsets.US_ASCII));
            ExchangeVectorsTest.Parsed large = rig.response(1); // now read: lane 1 completes
            assertEquals(4194304, large.body().length);
            assertEquals(Worker.Outcome.CLOSED, rig.finish());
        }
    }

    @Test
    void cancelLineInterruptsTheExchangeItNamesOnlyAndTheLaneServesOnClean() throws Exception {
        CountDownLatch started = new CountDownLatch(2);
        CountDownLatch release = new CountDownLatch(1);
        try (LaneRig rig = new LaneRig(dir, 3, r -> routes(r, started, release))) {
            rig.send(2, get("/wait-cancel?ms=30000", "AfterBurn-Exchange: A", "AfterBurn-Request-Id: rid-a"));
            rig.send(3, get("/hold", "AfterBurn-Exchange: B"));
            assertTrue(started.await(10, TimeUnit.SECONDS));
            rig.cancelLine("cancel nope"); // a token no lane carries: ignored
            rig.cancelLine("stop A"); // not a cancel line: ignored
            rig.cancelLine("cancel A");
            JsonNode a = json(rig.response(2));
            assertTrue(a.get("interrupted").asBoolean(), "lane 2 was interrupted: " + a);
            assertTrue(a.get("cancelled").asBoolean(), "and its flag set: " + a);
            assertTrue(rig.log().contains("[rid-a] cancelled\n"), "the per-request log line: " + rig.log());
            // The lines before "cancel A" were read first; had they cancelled anything, B would show it.
            release.countDown();
            JsonNode b = json(rig.response(3));
            assertFalse(b.get("interrupted").asBoolean(), "lane 3 untouched: " + b);
            assertFalse(b.get("cancelled").asBoolean(), "lane 3 untouched: " + b);
            // §2.5: the cancellation does not reach the lane's next exchange.
            rig.send(2, get("/state", "AfterBurn-Exchange: A2"));
            JsonNode next = json(rig.response(2));
            assertFalse(next.get("interrupted").asBoolean(), "stale interrupt on lane 2's next request: " + next);
            assertFalse(next.get("cancelled").asBoolean(), "stale flag on lane 2's next request: " + next);
            assertEquals(Worker.Outcome.CLOSED, rig.finish());
        }
    }

    @Test
    void cancelLineThatCrossedTheResponseDoesNotReachTheNextExchange() throws Exception {
        try (LaneRig rig = new LaneRig(dir, 2, r -> routes(r, null, null))) {
            for (int i = 0; i < 20; i++) {
                rig.send(2, get("/quick", "AfterBurn-Exchange: q" + i));
                assertEquals(200, rig.response(2).status());
                // The response went out; the watchdog's deadline passed as it did (§2.5).
                rig.cancelLine("cancel q" + i);
                rig.send(2, get("/sleep?ms=20", "AfterBurn-Exchange: s" + i));
                ExchangeVectorsTest.Parsed p = rig.response(2);
                assertEquals(200, p.status(), "an interrupt reached the next exchange: " + new String(p.body(), StandardCharsets.UTF_8));
            }
            assertEquals(Worker.Outcome.CLOSED, rig.finish());
        }
    }

    @Test
    void theDeadlineFiresTheSameCancellation() throws Exception {
        try (LaneRig rig = new LaneRig(dir, 2, r -> routes(r, new CountDownLatch(1), null))) {
            long start = System.nanoTime();
            rig.send(2, get("/wait-cancel?ms=30000", "AfterBurn-Timeout-Ms: 200"));
            JsonNode a = json(rig.response(2));
            assertTrue(a.get("interrupted").asBoolean() && a.get("cancelled").asBoolean(), a.toString());
            assertTrue(System.nanoTime() - start < TimeUnit.SECONDS.toNanos(10));
            rig.send(2, get("/state"));
            JsonNode next = json(rig.response(2));
            assertFalse(next.get("interrupted").asBoolean() || next.get("cancelled").asBoolean(), next.toString());
            assertEquals(Worker.Outcome.CLOSED, rig.finish());
        }
    }

    @Test
    void aFramingErrorOnLane2ClosesLane2AloneAndLane1ServesOn() throws Exception {
        try (LaneRig rig = new LaneRig(dir, 2, r -> routes(r, null, null))) {
            rig.send(2, "GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\nAfterBurn-Exchange: bad\r\n\r\n");
            ExchangeVectorsTest.Parsed p = rig.response(2);
            assertEquals(400, p.status());
            assertEquals("bad_request", ResponseReader.first(p.headers(), "afterburn-error"));
            assertTrue(rig.responses(2).atEof(), "§8.8: lane 2's response pipe is closed");
            assertFalse(rig.outcome.isDone(), "the worker serves on");
            rig.send(1, get("/one"));
            assertEquals("/one", new String(rig.response(1).body(), StandardCharsets.US_ASCII));
            assertEquals(Worker.Outcome.FAILED, rig.finish(), "a lane failed: the worker exits non-zero at the end");
            assertTrue(rig.log().contains("lane 2 closed"), rig.log());
        }
    }

    @Test
    void eofOnEveryLaneEndsTheWorkerCleanlyAfterTheExchangesInFlight() throws Exception {
        try (LaneRig rig = new LaneRig(dir, 3, r -> routes(r, null, null))) {
            rig.send(3, get("/sleep?ms=300"));
            rig.endLane(1);
            rig.endLane(2);
            assertTrue(rig.responses(1).atEof(), "lane 1 ended");
            rig.endLane(3); // while lane 3's exchange is in flight: it finishes first
            assertEquals(200, rig.response(3).status());
            assertTrue(rig.responses(3).atEof());
            assertEquals(Worker.Outcome.CLOSED, rig.outcome.get(20, TimeUnit.SECONDS));
        }
    }

    @Test
    void eachLaneHasItsOwnThread() throws Exception {
        try (LaneRig rig = new LaneRig(dir, 2, r -> routes(r, null, null))) {
            rig.send(1, get("/state"));
            rig.send(2, get("/state"));
            assertEquals("afterburn-lane-1", json(rig.response(1)).get("thread").asText());
            assertEquals("afterburn-lane-2", json(rig.response(2)).get("thread").asText());
            assertEquals(Worker.Outcome.CLOSED, rig.finish());
        }
    }
}
