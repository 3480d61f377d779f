package dev.afterburn.runtime;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * {@code System.out.println} in a handler does not corrupt responses (PROTOCOL.md §2.4),
 * under the real watchdog (found or built by {@link WatchdogBinary}), in fd mode and in stdio mode. Waits only on the watchdog's own signals: its
 * {@code listening on ADDR} log line and {@code /_/ready}.
 */
class WatchdogTest {
    private static final Pattern LISTENING = Pattern.compile("afterburn-watchdog: listening on (\\S+)");

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"fd", "stdio"})
    void printingInAHandlerDoesNotCorruptResponses(String mode) throws Exception {
        Path watchdogBinary = WatchdogBinary.locate(); // built or skipped on a fresh clone
        String classpath = System.getProperty("surefire.test.class.path", System.getProperty("java.class.path"));
        List<String> cmd = new ArrayList<>(List.of(watchdogBinary.toString(), "-port", "0", "-metrics_port", "0", "-listen_host", "127.0.0.1",
                "-workers", "1"));
        if (mode.equals("stdio")) cmd.add("-stdio");
        cmd.addAll(List.of("--", Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-XX:TieredStopAtLevel=1", "-cp", classpath, Main.class.getName(), PrintingFunction.class.getName()));
        Process watchdog = new ProcessBuilder(cmd).redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
        List<String> log = new ArrayList<>();
        try {
            BufferedReader stderr = new BufferedReader(new InputStreamReader(watchdog.getErrorStream(), StandardCharsets.UTF_8));
            String address = null;
            for (String line; address == null && (line = stderr.readLine()) != null; ) {
                log.add(line);
                Matcher m = LISTENING.matcher(line);
                if (m.find()) address = m.group(1);
            }
            if (address == null) fail("the watchdog exited before listening: " + log);
            Thread logReader = new Thread(() -> {
                try {
                    for (String line; (line = stderr.readLine()) != null; ) {
                        synchronized (log) {
                            log.add(line);
                            log.notifyAll();
                        }
                    }
                } catch (IOException ignored) {
                    // the watchdog exited
                }
            });
            logReader.setDaemon(true);
            logReader.start();

            HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
            URI base = URI.create("http://" + address);
            awaitReady(http, base);
            for (int i = 1; i <= 3; i++) {
                HttpResponse<String> r = http.send(HttpRequest.newBuilder(base.resolve("/p" + i))
                        .header("X-Request-Id", "print-" + mode + "-" + i).timeout(Duration.ofSeconds(10)).build(),
                        HttpResponse.BodyHandlers.ofString());
                assertEquals(200, r.statusCode(), r.body());
                assertEquals("clean /p" + i, r.body());
            }
            // The prints were not lost either: they are in the watchdog's log of worker output.
            awaitLog(log, "HTTP/1.1 200 OK printed-by-print-" + mode + "-3");
            awaitLog(log, "HTTP/1.1 200 OK banner-from-constructor");
        } finally {
            // SIGTERM: the watchdog closes the request pipe and the worker exits 0 (§9.4).
            // Process.destroy() would also close our end of its stderr and kill it with SIGPIPE.
            watchdog.toHandle().destroy();
            if (!watchdog.waitFor(20, TimeUnit.SECONDS)) watchdog.destroyForcibly();
        }
        assertEquals(0, watchdog.exitValue(), "watchdog exit status; log: " + log);
        awaitLog(log, "w1 pid");
        synchronized (log) {
            assertTrue(log.stream().anyMatch(l -> l.contains("stopped: exit status 0")), "the worker exits 0 on EOF: " + log);
        }
    }

    /** Polls /_/ready (PROTOCOL.md §9.2) until a worker answered its handshake. */
    private static void awaitReady(HttpClient http, URI base) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (System.nanoTime() < deadline) {
            HttpResponse<Void> r = http.send(HttpRequest.newBuilder(base.resolve("/_/ready")).build(),
                    HttpResponse.BodyHandlers.discarding());
            if (r.statusCode() == 200) return;
            Thread.sleep(10);
        }
        fail("no worker became ready");
    }

    private static void awaitLog(List<String> log, String text) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        synchronized (log) {
            while (log.stream().noneMatch(l -> l.contains(text))) {
                long left = TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime());
                if (left <= 0) fail("the log never showed " + text + ": " + log);
                log.wait(left);
            }
        }
    }
}
