package dev.afterburn.servlet;

import jakarta.servlet.MultipartConfigElement;
import jakarta.servlet.ServletException;
import jakarta.servlet.http.Part;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.charset.Charset;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * {@code multipart/form-data} (RFC 7578), for {@code getParts()} (Servlet 6 §3.2): the body is
 * read whole, within the servlet's {@link MultipartConfigElement} limits (and the watchdog's
 * body limit, PROTOCOL.md §7.2), and split at its boundary. Parts are held in memory; {@code
 * write} puts one in the config's location (or the temporary directory).
 */
final class Multipart {
    private Multipart() {}

    static boolean isMultipart(String contentType) {
        return contentType != null && contentType.strip().toLowerCase(Locale.ROOT).startsWith("multipart/form-data");
    }

    /** The parts of the body, in order. */
    static List<Part> parse(InputStream body, String contentType, MultipartConfigElement config, Charset charset)
            throws IOException, ServletException {
        String boundary = parameter(contentType, "boundary");
        if (boundary == null || boundary.isEmpty()) {
            throw new ServletException("afterburn-servlet: a multipart/form-data request without a boundary parameter");
        }
        long maxRequest = config.getMaxRequestSize();
        byte[] all = maxRequest > 0 ? body.readNBytes((int) Math.min(Integer.MAX_VALUE - 8, maxRequest + 1)) : body.readAllBytes();
        if (maxRequest > 0 && all.length > maxRequest) {
            throw new IllegalStateException("afterburn-servlet: the multipart request is larger than maxRequestSize " + maxRequest);
        }
        byte[] delimiter = ("--" + boundary).getBytes(StandardCharsets.ISO_8859_1);
        int at = indexOf(all, delimiter, 0);
        if (at < 0) throw new ServletException("afterburn-servlet: malformed multipart body: no boundary line");
        List<Part> parts = new ArrayList<>();
        while (true) {
            int p = at + delimiter.length;
            if (p + 2 <= all.length && all[p] == '-' && all[p + 1] == '-') return parts; // the close delimiter
            p = skipLine(all, p);
            int headEnd = indexOf(all, new byte[] {'\r', '\n', '\r', '\n'}, p);
            if (headEnd < 0) throw new ServletException("afterburn-servlet: malformed multipart body: a part's head does not end");
            Map<String, List<String>> headers = headers(new String(all, p, headEnd - p, StandardCharsets.UTF_8));
            int start = headEnd + 4;
            int next = indexOf(all, concat(new byte[] {'\r', '\n'}, delimiter), start);
            if (next < 0) throw new ServletException("afterburn-servlet: malformed multipart body: a part does not end with the boundary");
            byte[] content = java.util.Arrays.copyOfRange(all, start, next);
            BodyPart part = new BodyPart(headers, content, config);
            if (part.name == null) throw new ServletException("afterburn-servlet: malformed multipart body: a part without a name");
            if (config.getMaxFileSize() > 0 && content.length > config.getMaxFileSize()) {
                throw new IllegalStateException("afterburn-servlet: the part \"" + part.name + "\" is larger than maxFileSize " + config.getMaxFileSize());
            }
            part.charset = charset;
            parts.add(part);
            at = next + 2;
        }
    }

    private static int skipLine(byte[] b, int p) throws ServletException {
        for (int i = p; i + 1 < b.length; i++) {
            if (b[i] == '\r' && b[i + 1] == '\n') return i + 2;
        }
        throw new ServletException("afterburn-servlet: malformed multipart body: a boundary line does not end");
    }

    private static byte[] concat(byte[] a, byte[] b) {
        byte[] out = java.util.Arrays.copyOf(a, a.length + b.length);
        System.arraycopy(b, 0, out, a.length, b.length);
        return out;
    }

    static int indexOf(byte[] hay, byte[] needle, int from) {
        outer:
        for (int i = Math.max(from, 0); i <= hay.length - needle.length; i++) {
            for (int j = 0; j < needle.length; j++) {
                if (hay[i + j] != needle[j]) continue outer;
            }
            return i;
        }
        return -1;
    }

    private static Map<String, List<String>> headers(String head) {
        Map<String, List<String>> out = new LinkedHashMap<>();
        for (String line : head.split("\r\n")) {
            int colon = line.indexOf(':');
            if (colon <= 0) continue;
            out.computeIfAbsent(line.substring(0, colon).strip().toLowerCase(Locale.ROOT), k -> new ArrayList<>())
                    .add(line.substring(colon + 1).strip());
        }
        return out;
    }

    /** A parameter of a field value such as {@code form-data; name="a"; filename="b.txt"}, unquoted. */
    static String parameter(String value, String name) {
        if (value == null) return null;
        for (String p : value.split(";")) {
            int eq = p.indexOf('=');
            if (eq > 0 && p.substring(0, eq).strip().equalsIgnoreCase(name)) {
                String v = p.substring(eq + 1).strip();
                if (v.length() >= 2 && v.startsWith("\"") && v.endsWith("\"")) v = v.substring(1, v.length() - 1).replace("\\\"", "\"");
                return v;
            }
        }
        return null;
    }

    /** One part, its bytes in memory. */
    static final class BodyPart implements Part {
        private final Map<String, List<String>> headers;
        private final byte[] content;
        private final MultipartConfigElement config;
        final String name;
        final String filename;
        Charset charset = StandardCharsets.UTF_8;

        BodyPart(Map<String, List<String>> headers, byte[] content, MultipartConfigElement config) {
            this.headers = headers;
            this.content = content;
            this.config = config;
            String disposition = getHeader("Content-Disposition");
            this.name = parameter(disposition, "name");
            this.filename = parameter(disposition, "filename");
        }

        /** The text of a field without a file name, for getParameter (§3.1). */
        String text() {
            String cs = parameter(getContentType(), "charset");
            return new String(content, cs != null ? Charset.forName(cs) : charset);
        }

        @Override
        public InputStream getInputStream() {
            return new ByteArrayInputStream(content);
        }

        @Override
        public String getContentType() {
            return getHeader("Content-Type");
        }

        @Override
        public String getName() {
            return name;
        }

        @Override
        public String getSubmittedFileName() {
            return filename;
        }

        @Override
        public long getSize() {
            return content.length;
        }

        @Override
        public void write(String fileName) throws IOException {
            Path target = Path.of(fileName);
            if (!target.isAbsolute()) {
                String location = config.getLocation();
                target = Path.of(location == null || location.isEmpty() ? System.getProperty("java.io.tmpdir") : location).resolve(fileName);
            }
            try (OutputStream out = Files.newOutputStream(target)) {
                out.write(content);
            }
        }

        @Override
        public void delete() {
            // held in memory: nothing on disk to delete
        }

        @Override
        public String getHeader(String n) {
            List<String> v = headers.get(n.toLowerCase(Locale.ROOT));
            return v == null ? null : v.get(0);
        }

        @Override
        public Collection<String> getHeaders(String n) {
            List<String> v = headers.get(n.toLowerCase(Locale.ROOT));
            return v == null ? List.of() : List.copyOf(v);
        }

        @Override
        public Collection<String> getHeaderNames() {
            return List.copyOf(headers.keySet());
        }
    }
}
