package dev.afterburn.examples.orders;

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
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Assumptions;

/**
 * The packaged application, running: on its own (Tomcat on a port it picks) or under the real
 * watchdog. Readiness is awaited on each one's own signal — the line that names the port, then
 * {@code /actuator/health} or the watchdog's {@code /_/ready} — never a sleep.
 */
final class Server implements AutoCloseable {
    static final Path JAR = Path.of(System.getProperty("orders.jar", "target/orders.jar"));
    private static final Duration START = Duration.ofSeconds(90); // a loaded 2-CPU machine starts Spring in ~5 s

    final String base;
    private final Process process;
    private final List<String> output;

    private Server(Process process, List<String> output, String base) {
        this.process = process;
        this.output = output;
        this.base = base;
    }

    static Path watchdog() {
        Path repo = Path.of(System.getProperty("afterburn.repo", "../../..")).toAbsolutePath().normalize();
        Path w = Path.of(System.getProperty("afterburn.watchdog", repo.resolve("go/bin/afterburn-watchdog").toString()));
        if (!Files.isExecutable(w)) {
            String why = w + " is not built: the HTTP tests under the watchdog are skipped (make go/bin/afterburn-watchdog)";
            if (Boolean.getBoolean("afterburn.watchdog.required")) throw new AssertionError(why);
            System.err.println("SKIPPED: " + why);
            Assumptions.abort(why);
        }
        return w;
    }

    /** The JVM flags a long-lived worker gets (java/README.md, "Launching"). */
    static List<String> java(String... more) {
        List<String> cmd = new ArrayList<>(List.of("java", "-XX:+UseSerialGC", "-Xmn32m"));
        cmd.addAll(List.of(more));
        cmd.addAll(List.of("-jar", JAR.toString()));
        return cmd;
    }

    static Server tomcat() throws Exception {
        List<String> cmd = java();
        cmd.add("--server.port=0");
        return start(cmd, Pattern.compile("Tomcat started on port (\\d+)"), "/actuator/health");
    }

    static Server underWatchdog(String... watchdogFlags) throws Exception {
        List<String> cmd = new ArrayList<>(List.of(watchdog().toString(), "-listen_host", "127.0.0.1", "-port", "0",
                "-metrics_port", "0", "-workers", "1"));
        cmd.addAll(List.of(watchdogFlags));
        cmd.add("--");
        cmd.addAll(java());
        return start(cmd, Pattern.compile("listening on 127\\.0\\.0\\.1:(\\d+)"), "/_/ready");
    }

    private static Server start(List<String> cmd, Pattern port, String readyPath) throws Exception {
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        List<String> output = java.util.Collections.synchronizedList(new ArrayList<>());
        CompletableFuture<String> found = new CompletableFuture<>();
        Thread reader = new Thread(() -> {
            try (BufferedReader r = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8))) {
                for (String line; (line = r.readLine()) != null; ) {
                    output.add(line);
                    Matcher m = port.matcher(line);
                    if (m.find()) found.complete(m.group(1));
                }
            } catch (IOException e) {
                found.completeExceptionally(e);
            }
            found.completeExceptionally(new IOException("the process ended before it named its port"));
        }, "server-output");
        reader.setDaemon(true);
        reader.start();
        Server s;
        try {
            s = new Server(p, output, "http://127.0.0.1:" + found.get(START.toSeconds(), TimeUnit.SECONDS));
        } catch (Exception e) {
            p.destroyForcibly();
            throw new AssertionError("no port from " + cmd + ": " + e + "\n" + String.join("\n", output), e);
        }
        long end = System.nanoTime() + START.toNanos();
        while (true) {
            try {
                if (s.get(readyPath).statusCode() == 200) return s;
            } catch (IOException e) {
                // not accepting yet
            }
            if (System.nanoTime() > end || !p.isAlive()) {
                s.close();
                throw new AssertionError("not ready at " + readyPath + ":\n" + String.join("\n", output));
            }
            Thread.sleep(20); // polling the readiness endpoint, the server's own signal
        }
    }

    private static final HttpClient CLIENT = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
            .connectTimeout(Duration.ofSeconds(5)).build();

    HttpResponse<String> get(String path, String... headers) throws IOException, InterruptedException {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(base + path)).timeout(Duration.ofSeconds(30)).GET();
        if (headers.length > 0) b.headers(headers);
        return CLIENT.send(b.build(), HttpResponse.BodyHandlers.ofString());
    }

    HttpResponse<String> post(String path, String contentType, String body, String... headers) throws IOException, InterruptedException {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(base + path)).timeout(Duration.ofSeconds(30))
                .header("Content-Type", contentType).POST(HttpRequest.BodyPublishers.ofString(body));
        if (headers.length > 0) b.headers(headers);
        return CLIENT.send(b.build(), HttpResponse.BodyHandlers.ofString());
    }

    /** What the server (and, under the watchdog, the worker) printed, for failure messages. */
    String log() {
        synchronized (output) {
            return String.join("\n", output);
        }
    }

    @Override
    public void close() throws Exception {
        process.destroy(); // SIGTERM: the watchdog drains and exits 0 (§9.4); Spring closes its context
        if (!process.waitFor(30, TimeUnit.SECONDS)) process.destroyForcibly();
    }
}
