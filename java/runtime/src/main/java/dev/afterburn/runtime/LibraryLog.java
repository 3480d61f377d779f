package dev.afterburn.runtime;

import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.io.PrintWriter;
import java.io.StringWriter;

/**
 * The library's own records on stderr: a handler's exception (§8.3), a protocol error it
 * answered (§8.8), a lane that failed (§2.5), a function that could not start (§9.1). Each
 * record is one write in the worker's {@link LogFormat}, so that records of several lanes
 * never interleave and, with {@code AFTERBURN_LOG_FORMAT=json}, each is one JSON object on
 * one line that the watchdog merges into its own (§9.5).
 */
final class LibraryLog {
    private final OutputStream out;
    private final LogFormat format;

    LibraryLog(OutputStream out, LogFormat format) {
        this.out = out;
        this.format = format;
    }

    /** Descriptor 2 in the format of this process: for records outside the serve loop. */
    static LibraryLog stderr() {
        return new LibraryLog(new FileOutputStream(FileDescriptor.err), LogFormat.ofProcess());
    }

    /** A failure; {@code requestId} null when it belongs to no request. */
    void error(String requestId, String text) {
        write("error", requestId, text);
    }

    /** Something the library works around. */
    void warning(String requestId, String text) {
        write("warning", requestId, text);
    }

    /** A failure with its exception and stack, after {@code text}, in the same record. */
    void error(String requestId, String text, Throwable failure) {
        StringWriter s = new StringWriter();
        s.write(text);
        failure.printStackTrace(new PrintWriter(s));
        error(requestId, s.toString());
    }

    private void write(String level, String requestId, String text) {
        try {
            out.write(format.record(level, requestId, text)); // one write: one record
            out.flush();
        } catch (IOException ignored) {
            // stderr is gone; nothing is left to tell
        }
    }
}
