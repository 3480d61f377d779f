import io.netty.util.Version;

/**
 * Prints the version of the peer named by its argument and the JDK's, on one line: how the
 * benchmark report names a Java peer ("Netty 4.2.20.Final; JDK 17.0.15"), read from the jars
 * on the classpath, not from the pom. "jdk" names the JDK's own HttpServer.
 */
public final class PeerVersion {
    public static void main(String[] args) {
        String jdk = "JDK " + System.getProperty("java.version");
        String peer = switch (args.length == 0 ? "jdk" : args[0]) {
            case "netty" -> "Netty " + Version.identify().get("netty-codec-http").artifactVersion();
            case "undertow" -> "Undertow " + io.undertow.Version.getVersionString();
            case "jdk" -> "com.sun.net.httpserver";
            default -> throw new IllegalArgumentException("PeerVersion: unknown peer " + args[0] + " (netty, undertow, jdk)");
        };
        System.out.println(peer + "; " + jdk);
    }
}
