package dev.afterburn.runtime;

import java.io.FileDescriptor;
import java.io.FileInputStream;
import java.io.FileNotFoundException;
import java.io.FileOutputStream;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.PrintStream;
import java.util.Map;

/**
 * Where the protocol runs: the descriptors of AFTERBURN_FDS (PROTOCOL.md §2.2, §2.3) and the
 * stdout/stdin protection of §2.4.
 *
 * <p>In fd mode ({@code AFTERBURN_FDS=3,4}) the pipes are opened by path,
 * {@code /dev/fd/3} and {@code /dev/fd/4}; fd 1 is a log pipe, so {@code System.out} and
 * native writes alike land in the logs. In stdio mode ({@code 0,1}) and under a legacy
 * watchdog (variable absent) the protocol is on stdin and stdout. Java 17 has no
 * {@code dup2}, so the library keeps its own streams on fds 0 and 1 and points
 * {@code System.out} at stderr and {@code System.in} at an empty stream: Java-level prints
 * are protected, writes to fd 1 from native code are not (§2.4 allows this for languages
 * without {@code dup2}).
 */
final class Environment {
    private Environment() {}

    /** A malformed AFTERBURN_* variable: the worker exits non-zero with this message (§2.3). */
    static final class Invalid extends RuntimeException {
        private static final long serialVersionUID = 1L;

        Invalid(String message) {
            super(message, null, false, false);
        }
    }

    /** The opened protocol streams. */
    record Streams(InputStream requests, OutputStream responses) {}

    private static Streams opened;

    static Invalid bad(String name, String value, String want) {
        return new Invalid("afterburn: bad " + name + " in environment: " + Ascii.quote(value) + " (want " + want + ")");
    }

    /**
     * Parses AFTERBURN_STREAM_FDS (§2.5): the request and response descriptors of lanes 2 to K,
     * an even number of decimal descriptors separated by commas; absent means none.
     */
    static int[] streamDescriptors(Map<String, String> env) {
        String v = env.get("AFTERBURN_STREAM_FDS");
        if (v == null) return new int[0];
        String[] parts = v.split(",", -1);
        int[] fds = new int[parts.length];
        for (int i = 0; i < parts.length; i++) {
            long fd = Ascii.parseDigits(parts[i]);
            if (fd < 0 || fd > (1 << 30)) fds = null;
            if (fds == null) break;
            fds[i] = (int) fd;
        }
        if (fds == null || fds.length % 2 != 0) {
            throw bad("AFTERBURN_STREAM_FDS", v, "an even number of descriptors separated by commas, like \"5,6,7,8\"");
        }
        return fds;
    }

    /** Parses AFTERBURN_STREAM_CANCEL_FD (§2.5): one decimal descriptor; absent means -1. */
    static int cancelDescriptor(Map<String, String> env) {
        String v = env.get("AFTERBURN_STREAM_CANCEL_FD");
        if (v == null) return -1;
        long fd = Ascii.parseDigits(v);
        if (fd < 0 || fd > (1 << 30)) throw bad("AFTERBURN_STREAM_CANCEL_FD", v, "one descriptor, like \"9\"");
        return (int) fd;
    }

    /** Parses AFTERBURN_FDS: two decimal descriptors separated by a comma; absent means 0,1. */
    static int[] descriptors(Map<String, String> env) {
        String v = env.get("AFTERBURN_FDS");
        if (v == null) return new int[] {0, 1};
        int comma = v.indexOf(',');
        long in = comma < 0 ? -1 : Ascii.parseDigits(v.substring(0, comma));
        long out = comma < 0 ? -1 : Ascii.parseDigits(v.substring(comma + 1));
        if (in < 0 || out < 0 || in > (1 << 30) || out > (1 << 30)) {
            throw bad("AFTERBURN_FDS", v, "two descriptors separated by a comma, like \"3,4\"");
        }
        return new int[] {(int) in, (int) out};
    }

    /**
     * Opens the protocol streams once per process and applies the stdout protection of §2.4.
     * The launcher calls this before it loads user code, so that output of user class
     * initialisation is protected too; {@code AfterBurn.serve} calls it again and gets the
     * same streams.
     */
    static synchronized Streams protocolStreams() {
        if (opened != null) return opened;
        int[] fds = descriptors(System.getenv());
        // §2.5: the lanes' variables are checked here too, so that a bad value stops the
        // launcher before user code loads.
        streamDescriptors(System.getenv());
        cancelDescriptor(System.getenv());
        InputStream in = fds[0] == 0 ? new FileInputStream(FileDescriptor.in) : openIn(fds[0], "AFTERBURN_FDS");
        OutputStream out = fds[1] == 1 ? new FileOutputStream(FileDescriptor.out) : openOut(fds[1], "AFTERBURN_FDS");
        if (fds[0] == 0 || fds[1] == 0) System.setIn(InputStream.nullInputStream());
        if (fds[0] == 1 || fds[1] == 1) {
            System.out.flush();
            System.setOut(new PrintStream(new FileOutputStream(FileDescriptor.err), true));
        }
        opened = new Streams(in, out);
        return opened;
    }

    /** Opens descriptor {@code fd}, named by {@code variable}, for reading, by path (§2.4). */
    static InputStream openIn(int fd, String variable) {
        try {
            return new FileInputStream("/dev/fd/" + fd);
        } catch (FileNotFoundException e) {
            throw notOpen(fd, variable, e);
        }
    }

    /** Opens descriptor {@code fd}, named by {@code variable}, for writing, by path (§2.4). */
    static OutputStream openOut(int fd, String variable) {
        try {
            return new FileOutputStream("/dev/fd/" + fd);
        } catch (FileNotFoundException e) {
            throw notOpen(fd, variable, e);
        }
    }

    private static Invalid notOpen(int fd, String variable, FileNotFoundException e) {
        return new Invalid("afterburn: " + variable + " names descriptor " + fd + ", which cannot be opened: " + e.getMessage());
    }
}
