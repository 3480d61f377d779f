package dev.afterburn.runtime;

import java.io.FileDescriptor;
import java.io.FileInputStream;
import java.io.IOException;
import java.lang.reflect.Field;
import java.lang.reflect.Method;

/**
 * Closes an inherited descriptor by its number, which Java 17 has no API for.
 *
 * <p>Why it is needed: the library opens its pipes by path ({@code /dev/fd/N}, §2.4), which
 * makes a second descriptor on the same pipe; closing the stream closes that one, and the
 * pipe stays open through the inherited {@code N}. PROTOCOL.md §2.5 wants the watchdog to see
 * EOF when the library closes a lane: the lanes beyond its maximum at start-up, and a lane
 * that ended (§8.8) while the others serve on. So {@code N} itself must be closed.
 *
 * <p>How: a {@link FileDescriptor} is made to hold {@code N} and closed through a
 * {@link FileInputStream}. Its private {@code fd} field is set with {@code sun.misc.Unsafe}
 * (module {@code jdk.unsupported}, open to every module), because reflection into
 * {@code java.io} is closed since Java 16 without {@code --add-opens}. When that fails on
 * some JVM, the descriptor stays open, a warning goes to stderr once, and the watchdog sees
 * the lane's EOF only when the process exits.
 */
final class Descriptors {
    private Descriptors() {}

    private static volatile boolean warned;

    /** The means, found once; null when this JVM offers none. */
    private static final class Access {
        static final Object UNSAFE;
        static final Method PUT_INT;
        static final long FD_OFFSET;

        static {
            Object unsafe = null;
            Method putInt = null;
            long offset = -1;
            try {
                Class<?> c = Class.forName("sun.misc.Unsafe");
                Field f = c.getDeclaredField("theUnsafe");
                f.setAccessible(true);
                unsafe = f.get(null);
                offset = (long) c.getMethod("objectFieldOffset", Field.class)
                        .invoke(unsafe, FileDescriptor.class.getDeclaredField("fd"));
                putInt = c.getMethod("putInt", Object.class, long.class, int.class);
            } catch (ReflectiveOperationException | RuntimeException e) {
                unsafe = null;
            }
            UNSAFE = unsafe;
            PUT_INT = putInt;
            FD_OFFSET = offset;
        }
    }

    /**
     * Closes descriptor {@code fd} of this process. Descriptors 0 to 2 are never closed.
     *
     * @return whether it was closed
     */
    static boolean close(int fd) {
        if (fd <= 2) return false;
        try {
            if (Access.UNSAFE == null) throw new IllegalStateException("sun.misc.Unsafe is not available");
            FileDescriptor d = new FileDescriptor();
            Access.PUT_INT.invoke(Access.UNSAFE, d, Access.FD_OFFSET, fd);
            new FileInputStream(d).close();
            return true;
        } catch (ReflectiveOperationException | RuntimeException | IOException | LinkageError e) {
            if (!warned) {
                warned = true;
                LibraryLog.stderr().warning(null, "afterburn: cannot close descriptor " + fd + " (" + e
                        + "); the watchdog sees the lane end when the process exits");
            }
            return false;
        }
    }
}
