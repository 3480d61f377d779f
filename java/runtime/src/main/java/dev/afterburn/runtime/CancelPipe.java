package dev.afterburn.runtime;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;

/**
 * The cancel pipe of PROTOCOL.md §2.5, watchdog → worker: lines {@code cancel TOKEN\n}, read
 * all the time by a daemon thread of its own, each firing the cancellation of the exchange
 * whose AfterBurn-Exchange token (§4.6) is {@code TOKEN}. Any other line is ignored, and so is
 * a token no lane carries; EOF (or a read error) stops the reader and nothing else.
 */
final class CancelPipe {
    private CancelPipe() {}

    private static final String PREFIX = "cancel ";
    /** §4.6: a token is 1–64 characters; a longer line is no cancel line. */
    private static final int MAX_LINE = PREFIX.length() + 64;

    /**
     * The token a line names, or null when the line is not a cancel line. {@code line} is
     * without its {@code \n}.
     */
    static String token(String line) {
        if (!line.startsWith(PREFIX)) return null;
        String token = line.substring(PREFIX.length());
        if (token.isEmpty() || token.length() > 64) return null;
        for (int i = 0; i < token.length(); i++) {
            char c = token.charAt(i);
            boolean ok = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
            if (!ok) return null;
        }
        return token;
    }

    /** Starts the reader thread on {@code in}; it closes {@code in} when the pipe ends. */
    static Thread start(InputStream in, Cancellations cancellations) {
        Thread t = new Thread(() -> read(in, cancellations), "afterburn-cancel-pipe");
        t.setDaemon(true); // a cancel pipe that stays open never keeps the JVM from exiting
        t.start();
        return t;
    }

    /** Reads lines until EOF; a line longer than any cancel line is skipped to its end. */
    static void read(InputStream in, Cancellations cancellations) {
        byte[] buf = new byte[4096];
        byte[] line = new byte[MAX_LINE];
        int len = 0;
        boolean tooLong = false;
        try (in) {
            for (int n; (n = in.read(buf)) >= 0; ) {
                for (int i = 0; i < n; i++) {
                    byte b = buf[i];
                    if (b == '\n') {
                        if (!tooLong) {
                            String token = token(new String(line, 0, len, StandardCharsets.ISO_8859_1));
                            if (token != null) cancellations.cancel(token);
                        }
                        len = 0;
                        tooLong = false;
                    } else if (len < MAX_LINE) {
                        line[len++] = b;
                    } else {
                        tooLong = true;
                    }
                }
            }
        } catch (IOException e) {
            // a broken cancel pipe ends like EOF: cancellations stop, the lanes serve on
        }
    }
}
