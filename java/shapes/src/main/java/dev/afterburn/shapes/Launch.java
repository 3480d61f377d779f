package dev.afterburn.shapes;

import dev.afterburn.runtime.AfterBurn;
import dev.afterburn.runtime.Handler;
import java.lang.reflect.InvocationTargetException;
import java.util.function.Function;

/**
 * What the three launchers ({@link OpenFaas#main}, {@link Lambda#main},
 * {@link CloudEvents#main}) share with the runtime's {@code dev.afterburn.runtime.Main}: the
 * protocol descriptors are opened and stdout protected before the user's class is loaded
 * (PROTOCOL.md §2.4), so a static initialiser that prints cannot reach the protocol; a class
 * that cannot be made into a handler ends the process with status 1 and the reason on stderr
 * (§9.1); a missing argument is a usage error, status 2.
 */
final class Launch {
    private Launch() {}

    /**
     * Serves the instance of the class {@code args[0]} (or {@code defaultClass} when there is no
     * argument and it is not null), adapted by {@code adapt}, which throws
     * IllegalArgumentException for an instance of a shape it does not know.
     */
    static void serve(String launcher, String[] args, String defaultClass, String shapes, Function<Object, Handler> adapt) {
        AfterBurn.protectStdout(); // before any user class is loaded
        String name = args.length > 0 ? args[0] : defaultClass;
        if (name == null) {
            System.err.println("usage: java -cp … " + launcher + " <class: " + shapes + ">");
            System.exit(2);
        }
        Handler handler;
        try {
            Class<?> c = Class.forName(name);
            Object instance = c.getDeclaredConstructor().newInstance();
            handler = adapt.apply(instance);
        } catch (InvocationTargetException e) {
            failed(name, e.getCause());
            return;
        } catch (ExceptionInInitializerError e) {
            failed(name, e.getCause() != null ? e.getCause() : e);
            return;
        } catch (ReflectiveOperationException | LinkageError | RuntimeException e) {
            failed(name, e);
            return;
        }
        AfterBurn.serve(handler);
    }

    private static void failed(String name, Throwable cause) {
        System.err.print("afterburn: initialising " + name + " failed:\n");
        cause.printStackTrace(System.err);
        System.err.flush();
        System.exit(1);
    }
}
