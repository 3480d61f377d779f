package dev.afterburn.runtime;

import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * A log stream that keeps each write as one string, so that a test can see that a record
 * went out in one write (lanes write to one stderr at once).
 */
final class WriteLog extends OutputStream {
    private final List<String> writes = new CopyOnWriteArrayList<>();

    @Override
    public void write(int b) {
        writes.add(String.valueOf((char) b));
    }

    @Override
    public void write(byte[] b, int off, int len) {
        writes.add(new String(b, off, len, StandardCharsets.UTF_8));
    }

    /** The writes so far, in order. */
    List<String> writes() {
        return writes;
    }
}
