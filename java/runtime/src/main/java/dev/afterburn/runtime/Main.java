package dev.afterburn.runtime;

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.util.Arrays;

/**
 * The launcher: {@code java -cp app.jar:afterburn-runtime.jar:… dev.afterburn.runtime.Main
 * com.example.Handler [args…]}.
 *
 * <p>It opens the protocol descriptors and protects stdout (PROTOCOL.md §2.4) before it loads
 * the named class, so that output printed while user classes initialise cannot reach the
 * protocol either. The class either implements {@link Handler} with a public no-argument
 * constructor, and is served, or has a {@code public static void main(String[])}, which is
 * called with the remaining arguments and calls {@link AfterBurn#serve} itself. A class that
 * fails to initialise ends the process with status 1 and the reason on stderr (§9.1).
 */
public final class Main {
    private Main() {}

    /**
     * Starts a function.
     *
     * @param args the class to run, then its arguments
     * @throws Throwable what the function's {@code main} throws
     */
    public static void main(String[] args) throws Throwable {
        if (args.length == 0) {
            LibraryLog.stderr().error(null, "usage: java -cp … dev.afterburn.runtime.Main <class implementing Handler, or with main> [args…]");
            System.exit(2);
        }
        try {
            Environment.protocolStreams();
        } catch (Environment.Invalid e) {
            LibraryLog.stderr().error(null, e.getMessage()); // §2.3
            System.exit(2);
        }
        Class<?> c;
        try {
            c = Class.forName(args[0]);
        } catch (ExceptionInInitializerError e) {
            initialisationFailed(args[0], e.getCause() != null ? e.getCause() : e);
            return;
        } catch (ClassNotFoundException | LinkageError e) {
            initialisationFailed(args[0], e);
            return;
        }
        if (Handler.class.isAssignableFrom(c)) {
            Handler handler;
            try {
                handler = (Handler) c.getDeclaredConstructor().newInstance();
            } catch (InvocationTargetException e) {
                initialisationFailed(args[0], e.getCause());
                return;
            } catch (ReflectiveOperationException e) {
                initialisationFailed(args[0], e);
                return;
            }
            AfterBurn.serve(handler);
            return;
        }
        Method main;
        try {
            main = c.getMethod("main", String[].class);
        } catch (NoSuchMethodException e) {
            initialisationFailed(args[0], new IllegalArgumentException(
                    args[0] + " neither implements " + Handler.class.getName() + " nor has a main method"));
            return;
        }
        if (!Modifier.isStatic(main.getModifiers())) {
            initialisationFailed(args[0], new IllegalArgumentException(args[0] + ".main is not static"));
            return;
        }
        try {
            main.invoke(null, (Object) Arrays.copyOfRange(args, 1, args.length));
        } catch (InvocationTargetException e) {
            throw e.getCause();
        }
    }

    private static void initialisationFailed(String name, Throwable cause) {
        LibraryLog.stderr().error(null, "afterburn: initialising " + name + " failed:\n", cause); // §9.1
        System.exit(1);
    }
}
