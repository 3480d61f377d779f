package dev.afterburn.runtime;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.BufferedInputStream;
import java.io.FileInputStream;
import java.io.FileOutputStream;
import java.io.OutputStream;
import java.io.RandomAccessFile;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * Lanes (PROTOCOL.md §2.5) in a worker process started through the launcher, with its lanes
 * on descriptors 3 to 9 as the watchdog passes them: the surplus lanes are closed (EOF on
 * their response pipes), the handshake announces the maximum, the lanes serve, EOF on every
 * lane exits 0, and malformed variables exit non-zero with a message.
 */
@Timeout(value = 60, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
class LanesProcessTest {
    @TempDir
    Path dir;

    private static List<String> java(String... args) {
        List<String> cmd = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC"));
        cmd.addAll(List.of(args));
        cmd.addAll(List.of("-cp", System.getProperty("surefire.test.class.path", System.getProperty("java.class.path")),
                Main.class.getName(), LaneFunction.class.getName()));
        return cmd;
    }

    /**
     * A worker with K = 3 lanes and a cancel pipe on fds 3..9, of which the library serves at
     * most 2, started with {@code jvmArgs}; the handshake is answered before it returns.
     */
    private final class ThreeLanes implements AutoCloseable {
        final List<OutputStream> requests = new ArrayList<>();
        final List<ResponseReader> responses = new ArrayList<>();
        final OutputStream cancel;
        final Process worker;
        final ExchangeVectorsTest.Parsed reply;

        ThreeLanes(String... jvmArgs) throws Exception {
            List<Path> fifos = Fifo.paths(dir, "f", 7);
            List<RandomAccessFile> keepers = new ArrayList<>();
            for (Path p : fifos) keepers.add(new RandomAccessFile(p.toFile(), "rw")); // our opens do not block
            for (int lane = 0; lane < 3; lane++) {
                requests.add(new FileOutputStream(fifos.get(2 * lane).toFile()));
                responses.add(new ResponseReader(new BufferedInputStream(new FileInputStream(fifos.get(2 * lane + 1).toFile()))));
            }
            cancel = new FileOutputStream(fifos.get(6).toFile());
            StringBuilder redirects = new StringBuilder();
            for (int i = 0; i < 7; i++) redirects.append(' ').append(i + 3).append(i % 2 == 0 && i < 6 || i == 6 ? "<" : ">").append(fifos.get(i));
            List<String> cmd = new ArrayList<>(List.of("/bin/sh", "-c", "exec \"$@\"" + redirects, "sh"));
            List<String> args = new ArrayList<>(List.of(jvmArgs));
            args.add("-D" + Lanes.MAX_PROPERTY + "=2");
            cmd.addAll(java(args.toArray(new String[0])));
            ProcessBuilder pb = new ProcessBuilder(cmd).redirectOutput(ProcessBuilder.Redirect.DISCARD)
                    .redirectError(dir.resolve("stderr").toFile());
            pb.environment().putAll(Map.of("AFTERBURN_FDS", "3,4", "AFTERBURN_STREAM_FDS", "5,6,7,8", "AFTERBURN_STREAM_CANCEL_FD", "9"));
            worker = pb.start();
            requests.get(0).write(WorkerTest.HANDSHAKE.getBytes(StandardCharsets.ISO_8859_1));
            requests.get(0).flush();
            reply = responses.get(0).next(false);
            assertTrue(reply != null, "no handshake reply; stderr: " + stderr());
            // The worker has its descriptors now: our stand-ins go, so its closes show as EOF.
            for (RandomAccessFile k : keepers) k.close();
        }

        @Override
        public void close() {
            worker.destroyForcibly();
            for (OutputStream o : requests) Fifo.closeQuietly(o);
            Fifo.closeQuietly(cancel);
        }
    }

    @Test
    void lanesBeyondTheMaximumAreClosedAndTheOthersServeUntilEofOnEvery() throws Exception {
        try (ThreeLanes w = new ThreeLanes()) {
            assertEquals("exchange, streams", ResponseReader.first(w.reply.headers(), "afterburn-capabilities"));
            assertEquals("2", ResponseReader.first(w.reply.headers(), "afterburn-streams"), "N, the library's maximum");
            assertTrue(within(10, () -> w.responses.get(2).atEof()), "§2.5: lane 3 > N is closed by the library; stderr: " + stderr());

            w.requests.get(1).write(LanesTest.get("/state").getBytes(StandardCharsets.ISO_8859_1));
            w.requests.get(1).flush();
            ExchangeVectorsTest.Parsed state = w.responses.get(1).next(false);
            assertEquals(200, state.status());
            assertEquals("afterburn-lane-2", new ObjectMapper().readTree(state.body()).get("thread").asText());

            w.requests.get(0).close(); // EOF on lane 1 ends lane 1 only
            assertTrue(within(10, () -> w.responses.get(0).atEof()));
            assertFalse(w.worker.waitFor(200, TimeUnit.MILLISECONDS), "the worker lives while lane 2 does");
            w.requests.get(1).close();
            assertTrue(w.worker.waitFor(20, TimeUnit.SECONDS), "the worker exits once every lane ended");
            assertEquals(0, w.worker.exitValue(), "§9.4: exit 0 after EOF on every lane; stderr: " + stderr());
            assertFalse(stderr().contains("cannot close descriptor"), stderr());
        }
    }

    /**
     * Descriptors' fallback: a JVM without the module {@code jdk.unsupported} (so without
     * {@code sun.misc.Unsafe}; {@code --limit-modules java.se} keeps every Java SE module and
     * drops it) cannot close an inherited descriptor by number. The library warns once and
     * serves on; the surplus lane's pipe then ends only with the process, which still exits 0.
     */
    @Test
    void withoutUnsafeTheSurplusLaneEndsWithTheProcessAndTheLibraryWarnsOnce() throws Exception {
        try (ThreeLanes w = new ThreeLanes("--limit-modules", "java.se")) {
            w.requests.get(1).write(LanesTest.get("/state").getBytes(StandardCharsets.ISO_8859_1));
            w.requests.get(1).flush();
            assertEquals(200, w.responses.get(1).next(false).status(), "lane 2 serves; stderr: " + stderr());
            assertFalse(within(1, () -> w.responses.get(2).atEof()), "lane 3's pipe cannot be closed before the exit");
            String warning = "afterburn: cannot close descriptor 7 (java.lang.IllegalStateException: sun.misc.Unsafe is not available);"
                    + " the watchdog sees the lane end when the process exits";
            assertTrue(stderr().contains(warning), "stderr: " + stderr());
            assertEquals(1, stderr().split("cannot close descriptor", -1).length - 1, "warned once for fds 7 and 8: " + stderr());

            w.requests.get(0).close();
            w.requests.get(1).close();
            assertTrue(w.worker.waitFor(20, TimeUnit.SECONDS), "the worker exits once every lane ended");
            assertEquals(0, w.worker.exitValue(), "stderr: " + stderr());
            assertTrue(within(10, () -> w.responses.get(2).atEof()), "the exit closes lane 3");
        }
    }

    /** A blocking check, bounded: false when it does not answer in time. */
    private static boolean within(int seconds, java.util.concurrent.Callable<Boolean> check) throws Exception {
        CompletableFuture<Boolean> f = new CompletableFuture<>();
        Thread t = new Thread(() -> {
            try {
                f.complete(check.call());
            } catch (Exception e) {
                f.completeExceptionally(e);
            }
        });
        t.setDaemon(true);
        t.start();
        try {
            return f.get(seconds, TimeUnit.SECONDS);
        } catch (java.util.concurrent.TimeoutException e) {
            return false;
        }
    }

    private String stderr() throws java.io.IOException {
        return Files.readString(dir.resolve("stderr"));
    }

    @ParameterizedTest(name = "{0}={1}")
    @CsvSource(delimiter = '|', value = {
        "AFTERBURN_STREAM_FDS|5,6,7|bad AFTERBURN_STREAM_FDS in environment",
        "AFTERBURN_STREAM_FDS|5;6|bad AFTERBURN_STREAM_FDS in environment",
        "AFTERBURN_STREAM_FDS|''|bad AFTERBURN_STREAM_FDS in environment",
        "AFTERBURN_STREAM_CANCEL_FD|x|bad AFTERBURN_STREAM_CANCEL_FD in environment",
        "AFTERBURN_STREAM_CANCEL_FD|9,10|bad AFTERBURN_STREAM_CANCEL_FD in environment",
        "afterburn.maxLanes|0|bad system property afterburn.maxLanes",
    })
    void malformedLaneSettingsExitNonZeroWithAMessage(String name, String value, String message) throws Exception {
        boolean property = name.startsWith("afterburn.");
        ProcessBuilder pb = new ProcessBuilder(property ? java("-D" + name + "=" + value) : java())
                .redirectOutput(ProcessBuilder.Redirect.DISCARD).redirectError(dir.resolve("stderr").toFile());
        pb.environment().put("AFTERBURN_FDS", "0,1");
        if (!property) pb.environment().put(name, value);
        Process p = pb.start();
        p.getOutputStream().close();
        assertTrue(p.waitFor(30, TimeUnit.SECONDS));
        assertNotEquals(0, p.exitValue(), "exit status; stderr: " + stderr());
        assertTrue(stderr().contains("afterburn: " + message), "stderr: " + stderr());
    }

}
