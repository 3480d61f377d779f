package dev.afterburn.runtime;

import java.io.FileInputStream;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.RandomAccessFile;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * A real kernel pipe for tests, made as a named FIFO: reads and writes block as on the
 * watchdog's pipes (64 KiB, back-pressure included), and, unlike {@code java.nio.channels.Pipe},
 * an interrupt does not close it. Both ends are opened without blocking: a read-write
 * "keeper" descriptor stands in for the missing end while the real ends open, then closes.
 */
final class Fifo {
    final Path path;
    final InputStream in;
    final OutputStream out;

    private Fifo(Path path, InputStream in, OutputStream out) {
        this.path = path;
        this.in = in;
        this.out = out;
    }

    /** Makes {@code n} FIFOs in {@code dir}, named {@code prefix0..}, their paths only. */
    static List<Path> paths(Path dir, String prefix, int n) throws IOException, InterruptedException {
        List<String> cmd = new ArrayList<>(List.of("mkfifo"));
        List<Path> paths = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            Path p = dir.resolve(prefix + i);
            paths.add(p);
            cmd.add(p.toString());
        }
        Process p = new ProcessBuilder(cmd).inheritIO().start();
        if (p.waitFor() != 0) throw new IOException("mkfifo failed: " + cmd);
        return paths;
    }

    /** Makes {@code n} pipes in {@code dir}, both ends open in this process. */
    static List<Fifo> open(Path dir, String prefix, int n) throws IOException, InterruptedException {
        List<Fifo> out = new ArrayList<>();
        for (Path p : paths(dir, prefix, n)) {
            RandomAccessFile keeper = new RandomAccessFile(p.toFile(), "rw"); // O_RDWR: opens at once
            try {
                out.add(new Fifo(p, new FileInputStream(p.toFile()), new FileOutputStream(p.toFile())));
            } finally {
                keeper.close();
            }
        }
        return out;
    }

    static void closeQuietly(AutoCloseable c) {
        try {
            c.close();
        } catch (Exception ignored) {
            // already closed
        }
    }
}
