package dev.afterburn.shapes;

import static org.junit.jupiter.api.Assertions.fail;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * One function class served by a shape's launcher under the real watchdog, one worker, on
 * 127.0.0.1: {@code afterburn-watchdog … -- java -cp <test classpath> LAUNCHER CLASS}. Waits
 * only on the watchdog's own signals (its {@code listening on} line, {@code /_/ready}); its log
 * goes into every failure message.
 */
final class ServedFunction implements AutoCloseable {
    private static final Pattern LISTENING = Pattern.compile("afterburn-watchdog: listening on (\\S+)");

    private final Process watchdog;
    private final List<String> log = new ArrayList<>();
    final URI base;
    final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

    ServedFunction(Class<?> launcher, String functionClass) throws Exception {
        Path bin = WatchdogBinary.locate();
        String classpath = System.getProperty("surefire.test.class.path", System.getProperty("java.class.path"));
        List<String> cmd = List.of(bin.toString(), "-port", "0", "-metrics_port", "0", "-listen_host", "127.0.0.1",
                "-workers", "1", "-exec_timeout", "10s", "--",
                Path.of(System.getProperty("java.home"), "bin", "java").toString(), "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC",
                "-cp", classpath, launcher.getName(), functionClass);
        watchdog = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        BufferedReader out = new BufferedReader(new InputStreamReader(watchdog.getInputStream(), StandardCharsets.UTF_8));
        String address = null;
        for (String line; address == null && (line = out.readLine()) != null; ) {
            log.add(line);
            Matcher m = LISTENING.matcher(line);
            if (m.find()) address = m.group(1);
        }
        if (address == null) fail("the watchdog exited before listening: " + log());
        Thread reader = new Thread(() -> {
            try {
                for (String line; (line = out.readLine()) != null; ) {
                    synchronized (log) {
                        log.add(line);
                        log.notifyAll();
                    }
                }
            } catch (IOException ignored) {
                // the watchdog exited
            }
        }, "watchdog-log");
        reader.setDaemon(true);
        reader.start();
        base = URI.create("http://" + address);
        awaitReady();
    }

    private void awaitReady() throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (System.nanoTime() < deadline) {
            HttpResponse<String> r = http.send(HttpRequest.newBuilder(base.resolve("/_/ready")).build(), HttpResponse.BodyHandlers.ofString());
            if (r.statusCode() == 200) return;
            if (!watchdog.isAlive()) break;
            Thread.sleep(10);
        }
        fail("no worker became ready: " + log());
    }

    HttpResponse<byte[]> send(HttpRequest.Builder request) throws Exception {
        return http.send(request.timeout(Duration.ofSeconds(20)).build(), HttpResponse.BodyHandlers.ofByteArray());
    }

    HttpRequest.Builder request(String target) {
        return HttpRequest.newBuilder(base.resolve(target));
    }

    String log() {
        synchronized (log) {
            return String.join("\n", log);
        }
    }

    /** Waits (up to 10 s) for a log line containing {@code text}. */
    void awaitLog(String text) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        synchronized (log) {
            while (log.stream().noneMatch(l -> l.contains(text))) {
                long left = TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime());
                if (left <= 0) fail("the log never showed " + text + ":\n" + log());
                log.wait(left);
            }
        }
    }

    /**
     * SIGTERM, then the checks of a clean life: the watchdog and its worker exit 0, and the worker
     * was never replaced (a malformed result or event left it serving).
     */
    @Override
    public void close() throws Exception {
        watchdog.toHandle().destroy(); // SIGTERM: the watchdog closes the request pipe, the worker exits 0 (§9.4)
        if (!watchdog.waitFor(30, TimeUnit.SECONDS)) {
            watchdog.destroyForcibly();
            fail("the watchdog did not exit within 30 s of SIGTERM:\n" + log());
        }
        if (watchdog.exitValue() != 0) fail("the watchdog exited " + watchdog.exitValue() + ":\n" + log());
        awaitLog("stopped: exit status 0");
        String all = log();
        if (all.contains(" replaced: ")) fail("the worker was replaced:\n" + all);
    }
}
