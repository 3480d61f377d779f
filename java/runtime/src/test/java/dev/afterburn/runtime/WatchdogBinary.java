package dev.afterburn.runtime;

import static org.junit.jupiter.api.Assertions.fail;

import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;

/**
 * The real watchdog, for the tests that run the library under it. A fresh clone has not built
 * it, and {@code mvn -f java/pom.xml install} must work there all the same, so it is found,
 * in this order:
 *
 * <ol>
 *   <li>the system property {@code afterburn.watchdog}, a path (missing there: a failure);</li>
 *   <li>{@code go/bin/afterburn-watchdog} of the checkout, as the top-level Makefile builds it;</li>
 *   <li>built here, into {@code target/afterburn-watchdog}, with the {@code go} on PATH from the
 *       checkout's {@code go/} module (Go's build cache makes the next build quick);</li>
 *   <li>else the test is skipped (Surefire counts it under "Skipped"), saying why and what to
 *       install; with {@code -Dafterburn.watchdog.required=true} (as {@code make test-java}
 *       sets) it fails instead.</li>
 * </ol>
 */
final class WatchdogBinary {
    private WatchdogBinary() {}

    private static Path found; // guarded by WatchdogBinary.class
    private static String skipped; // why the tests are skipped, said once; guarded by WatchdogBinary.class

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
            String why = made + " is not built and " + (go == null
                    ? "no go toolchain is on PATH to build it"
                    : module + " has no cmd/afterburn-watchdog to build it from")
                    + ": the tests that run under the real watchdog are skipped. Build it with `make "
                    + "go/bin/afterburn-watchdog` (needs Go, https://go.dev/dl/), or pass -Dafterburn.watchdog=PATH.";
            if (Boolean.getBoolean("afterburn.watchdog.required")) fail(why);
            skipped = why;
            System.err.println("SKIPPED: " + why); // Surefire's summary counts skips but does not say why
            Assumptions.abort(why);
        }
        Path out = Path.of("target", "afterburn-watchdog").toAbsolutePath();
        Files.createDirectories(out.getParent());
        Path output = Files.createTempFile(out.getParent(), "go-build", ".log");
        Process build = new ProcessBuilder(go.toString(), "build", "-o", out.toString(), "./cmd/afterburn-watchdog")
                .directory(module.toFile())
                .redirectErrorStream(true)
                .redirectOutput(output.toFile())
                .start();
        if (!build.waitFor(5, TimeUnit.MINUTES)) {
            build.destroyForcibly();
            fail("go build of the watchdog took over 5 minutes: " + Files.readString(output, StandardCharsets.UTF_8));
        }
        if (build.exitValue() != 0) {
            fail("go build ./cmd/afterburn-watchdog in " + module + " exited " + build.exitValue() + ":\n"
                    + Files.readString(output, StandardCharsets.UTF_8));
        }
        Files.deleteIfExists(output);
        return out;
    }

    private static Path onPath(String name) {
        String path = System.getenv("PATH");
        if (path == null) return null;
        for (String dir : path.split(File.pathSeparator)) {
            if (dir.isEmpty()) continue;
            Path p = Path.of(dir, name);
            if (Files.isExecutable(p)) return p;
        }
        return null;
    }
}
