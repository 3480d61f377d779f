package dev.afterburn.shapes;

import static org.junit.jupiter.api.Assertions.fail;

import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;

/**
 * The real watchdog, found as the runtime's tests find it: {@code -Dafterburn.watchdog=PATH};
 * else the checkout's {@code go/bin/afterburn-watchdog}; else built into
 * {@code target/afterburn-watchdog} with the {@code go} on PATH; else the tests that need it
 * are skipped, saying why (failed instead with {@code -Dafterburn.watchdog.required=true}, as
 * {@code make test-java} sets).
 */
final class WatchdogBinary {
    private WatchdogBinary() {}

    private static Path found; // guarded by WatchdogBinary.class
    private static String skipped; // guarded by WatchdogBinary.class

    static synchronized Path locate() throws IOException, InterruptedException {
        if (skipped != null) Assumptions.abort(skipped);
        if (found == null) found = find();
        return found;
    }

    private static Path find() throws IOException, InterruptedException {
        String given = System.getProperty("afterburn.watchdog");
        if (given != null && !given.isEmpty()) {
            Path p = Path.of(given);
            if (!Files.isExecutable(p)) fail("-Dafterburn.watchdog=" + given + " is not an executable file");
            return p;
        }
        Path repo = Path.of(System.getProperty("afterburn.repo", "../..")).toAbsolutePath().normalize();
        Path made = repo.resolve("go/bin/afterburn-watchdog");
        if (Files.isExecutable(made)) return made;
        Path module = repo.resolve("go");
        Path go = onPath("go");
        if (go == null || !Files.isDirectory(module.resolve("cmd/afterburn-watchdog"))) {
            String why = made + " is not built and " + (go == null ? "no go toolchain is on PATH" : module + " has no cmd/afterburn-watchdog")
                    + ": the handler-shape tests under the real watchdog are skipped. Build it with `make go/bin/afterburn-watchdog`,"
                    + " or pass -Dafterburn.watchdog=PATH.";
            if (Boolean.getBoolean("afterburn.watchdog.required")) fail(why);
            skipped = why;
            System.err.println("SKIPPED: " + why);
            Assumptions.abort(why);
        }
        Path out = Path.of("target", "afterburn-watchdog").toAbsolutePath();
        Files.createDirectories(out.getParent());
        Path log = Files.createTempFile(out.getParent(), "go-build", ".log");
        Process build = new ProcessBuilder(go.toString(), "build", "-o", out.toString(), "./cmd/afterburn-watchdog")
                .directory(module.toFile()).redirectErrorStream(true).redirectOutput(log.toFile()).start();
        if (!build.waitFor(5, TimeUnit.MINUTES)) {
            build.destroyForcibly();
            fail("go build of the watchdog took over 5 minutes: " + Files.readString(log, StandardCharsets.UTF_8));
        }
        if (build.exitValue() != 0) {
            fail("go build ./cmd/afterburn-watchdog in " + module + " exited " + build.exitValue() + ":\n"
                    + Files.readString(log, StandardCharsets.UTF_8));
        }
        Files.deleteIfExists(log);
        return out;
    }

    private static Path onPath(String name) {
        String path = System.getenv("PATH");
        if (path == null) return null;
        for (String dir : path.split(File.pathSeparator)) {
            if (!dir.isEmpty() && Files.isExecutable(Path.of(dir, name))) return Path.of(dir, name);
        }
        return null;
    }
}
