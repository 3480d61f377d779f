package dev.afterburn.servlet;

import dev.afterburn.runtime.Headers;
import dev.afterburn.runtime.ResponseHead;
import jakarta.servlet.ServletOutputStream;
import jakarta.servlet.http.Cookie;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.io.OutputStreamWriter;
import java.io.PrintWriter;
import java.nio.charset.Charset;
import java.nio.charset.IllegalCharsetNameException;
import java.nio.charset.StandardCharsets;
import java.nio.charset.UnsupportedCharsetException;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.function.Supplier;

/**
 * The response a servlet writes (Servlet 6 §5): status, fields and cookies until it commits,
 * then the body through {@link PipeOutput}. {@code sendError} and {@code sendRedirect} commit
 * it for the servlet and drop later output; the container writes the error (an error page, or
 * a short text body) when the dispatch ends.
 */
final class PipeResponse implements HttpServletResponse {
    static final int DEFAULT_BUFFER = 16 * 1024;
    private static final DateTimeFormatter HTTP_DATE = DateTimeFormatter
            .ofPattern("EEE, dd MMM yyyy HH:mm:ss 'GMT'", Locale.US).withZone(ZoneOffset.UTC);

    private final Exchange exchange;
    private final PipeOutput output;
    private int status = 200;
    private final List<String[]> fields = new ArrayList<>();
    private final List<Cookie> cookies = new ArrayList<>();
    private String contentType; // without charset
    private String contentTypeAsSet; // setContentType's argument, sent as it is while its charset stands
    private String charsetAsSet; // the charset that argument named, or null
    private String charset; // explicit: setCharacterEncoding, a content type's charset, or a locale mapping
    private Locale locale = Locale.getDefault();
    private boolean localeSet;
    private PrintWriter writer;
    private boolean streamUsed;
    private int errorStatus = -1; // sendError's status, until the container wrote the error
    private String errorMessage;
    private boolean redirected;
    private Supplier<Map<String, String>> trailers;

    PipeResponse(Exchange exchange) {
        this.exchange = exchange;
        this.output = new PipeOutput(this, DEFAULT_BUFFER);
    }

    Exchange exchange() {
        return exchange;
    }

    PipeRequest request() {
        return exchange.request();
    }

    PipeOutput output() {
        return output;
    }

    /** sendError or sendRedirect was called: the servlet's further output is dropped. */
    boolean suspended() {
        return errorStatus >= 0 || redirected;
    }

    int errorStatus() {
        return errorStatus;
    }

    String errorMessage() {
        return errorMessage;
    }

    /** The container takes over to write the error page (or default body). */
    void clearError() {
        errorStatus = -1;
        errorMessage = null;
        writer = null; // what the servlet wrote after sendError is dropped with it
        streamUsed = false;
        output.resetBuffer();
        output.reopen();
    }

    boolean hasTrailers() {
        return trailers != null;
    }

    /** Sends the head: status, fields, cookies, content type and language (the commit). */
    void writeHead() {
        ResponseHead head = exchange.head();
        head.status(status);
        String type = getContentType();
        if (type != null) head.header("Content-Type", type);
        if (localeSet && !containsHeader("Content-Language")) head.header("Content-Language", locale.toLanguageTag());
        for (String[] f : fields) head.header(f[0], f[1]);
        for (Cookie c : cookies) head.header("Set-Cookie", Cookies.format(c));
        if (trailers != null) {
            Supplier<Map<String, String>> t = trailers;
            head.trailers(() -> {
                Map<String, String> m = t.get();
                if (m == null || m.isEmpty()) return Headers.empty();
                String[] nv = new String[m.size() * 2];
                int i = 0;
                for (Map.Entry<String, String> e : m.entrySet()) {
                    nv[i++] = e.getKey();
                    nv[i++] = e.getValue();
                }
                return Headers.of(nv);
            });
        }
    }

    /** Ends the response for the exchange: the writer's characters, then the buffer. */
    void finish() throws IOException {
        if (writer != null) output.drain(writer);
        output.finish();
    }

    /** Servlet 6 §9.4: after a forward the response is sent and closed; later output is dropped. */
    void closeAfterForward() throws IOException {
        if (suspended()) return;
        if (writer != null) output.drain(writer);
        output.close();
    }

    private boolean committedOrSuspended() {
        return output.committed() || suspended();
    }

    @Override
    public boolean isCommitted() {
        return committedOrSuspended();
    }

    @Override
    public void addCookie(Cookie cookie) {
        if (committedOrSuspended()) return;
        Cookies.format(cookie); // refuse a bad value here, where the servlet sees it
        cookies.add(cookie);
    }

    @Override
    public boolean containsHeader(String name) {
        if (name.equalsIgnoreCase("Content-Type")) return contentType != null;
        if (name.equalsIgnoreCase("Set-Cookie") && !cookies.isEmpty()) return true;
        for (String[] f : fields) if (f[0].equalsIgnoreCase(name)) return true;
        return false;
    }

    @Override
    public String encodeURL(String url) {
        return url; // sessions are tracked by cookie only
    }

    @Override
    public String encodeRedirectURL(String url) {
        return url;
    }

    @Override
    public void sendError(int sc, String msg) throws IOException {
        if (committedOrSuspended()) throw new IllegalStateException("afterburn-servlet: sendError after the response was committed");
        output.resetBuffer();
        writer = null;
        streamUsed = false;
        status = sc;
        errorStatus = sc;
        errorMessage = msg;
    }

    @Override
    public void sendError(int sc) throws IOException {
        sendError(sc, null);
    }

    /**
     * 302 with a {@code Location}: an absolute URL, or one relative to the server root
     * ({@code /x}) as it is (RFC 9110 §10.2.2 allows relative references); a relative path is
     * resolved against the request URI first.
     */
    @Override
    public void sendRedirect(String location) throws IOException {
        if (committedOrSuspended()) throw new IllegalStateException("afterburn-servlet: sendRedirect after the response was committed");
        if (location == null) throw new IllegalArgumentException("afterburn-servlet: sendRedirect(null)");
        String target = location;
        boolean absolute = location.startsWith("/") || location.matches("^[A-Za-z][A-Za-z0-9+.-]*:.*");
        if (!absolute) {
            String uri = exchange.request().getRequestURI();
            target = uri.substring(0, uri.lastIndexOf('/') + 1) + location;
        }
        output.resetBuffer();
        status = 302;
        setHeader("Location", target);
        redirected = true;
    }

    @Override
    public void setDateHeader(String name, long date) {
        setHeader(name, HTTP_DATE.format(Instant.ofEpochMilli(date)));
    }

    @Override
    public void addDateHeader(String name, long date) {
        addHeader(name, HTTP_DATE.format(Instant.ofEpochMilli(date)));
    }

    @Override
    public void setHeader(String name, String value) {
        if (name == null || committedOrSuspended() && !redirectLocation(name)) return;
        if (special(name, value)) return;
        fields.removeIf(f -> f[0].equalsIgnoreCase(name));
        if (value != null) fields.add(new String[] {name, value});
    }

    private boolean redirectLocation(String name) {
        return redirected && name.equalsIgnoreCase("Location") && !output.committed();
    }

    /** Set by the container itself, whatever the state (the Content-Length of an ending response). */
    void setHeaderInternal(String name, String value) {
        fields.removeIf(f -> f[0].equalsIgnoreCase(name));
        fields.add(new String[] {name, value});
    }

    @Override
    public void addHeader(String name, String value) {
        if (name == null || value == null || committedOrSuspended()) return;
        if (special(name, value)) return;
        fields.add(new String[] {name, value});
    }

    /** Content-Type goes through setContentType (Servlet 6 §5.5); Set-Cookie is kept as a field line. */
    private boolean special(String name, String value) {
        if (name.equalsIgnoreCase("Content-Type")) {
            setContentType(value);
            return true;
        }
        return false;
    }

    @Override
    public void setIntHeader(String name, int value) {
        setHeader(name, Integer.toString(value));
    }

    @Override
    public void addIntHeader(String name, int value) {
        addHeader(name, Integer.toString(value));
    }

    @Override
    public void setStatus(int sc) {
        if (committedOrSuspended()) return;
        status = sc;
    }

    @Override
    public int getStatus() {
        return status;
    }

    /** Used by the container (error dispatch) whatever the state. */
    void statusInternal(int sc) {
        status = sc;
    }

    @Override
    public String getHeader(String name) {
        if (name.equalsIgnoreCase("Content-Type")) return getContentType();
        for (String[] f : fields) if (f[0].equalsIgnoreCase(name)) return f[1];
        if (name.equalsIgnoreCase("Set-Cookie") && !cookies.isEmpty()) return Cookies.format(cookies.get(0));
        return null;
    }

    @Override
    public Collection<String> getHeaders(String name) {
        List<String> out = new ArrayList<>();
        if (name.equalsIgnoreCase("Content-Type")) {
            if (getContentType() != null) out.add(getContentType());
            return out;
        }
        for (String[] f : fields) if (f[0].equalsIgnoreCase(name)) out.add(f[1]);
        if (name.equalsIgnoreCase("Set-Cookie")) for (Cookie c : cookies) out.add(Cookies.format(c));
        return out;
    }

    @Override
    public Collection<String> getHeaderNames() {
        LinkedHashSet<String> names = new LinkedHashSet<>();
        if (contentType != null) names.add("Content-Type");
        for (String[] f : fields) names.add(f[0]);
        if (!cookies.isEmpty()) names.add("Set-Cookie");
        return names;
    }

    @Override
    public void setTrailerFields(Supplier<Map<String, String>> supplier) {
        if (output.committed()) throw new IllegalStateException("afterburn-servlet: setTrailerFields after the response was committed");
        this.trailers = supplier;
    }

    @Override
    public Supplier<Map<String, String>> getTrailerFields() {
        return trailers;
    }

    /** The charset of the body: explicit, else the context's response encoding, else ISO-8859-1 (Servlet 6 §5.6). */
    @Override
    public String getCharacterEncoding() {
        if (charset != null) return charset;
        String ctx = exchange.context().getResponseCharacterEncoding();
        return ctx != null ? ctx : StandardCharsets.ISO_8859_1.name();
    }

    /**
     * The content type with the charset in force: as the servlet set it (spacing and case kept)
     * while its charset is the one in force, else rebuilt as {@code type;charset=X}.
     */
    @Override
    public String getContentType() {
        if (contentType == null) return null;
        boolean asSet = contentTypeAsSet != null && java.util.Objects.equals(charset, charsetAsSet)
                && (charsetAsSet != null || writer == null);
        if (asSet) return contentTypeAsSet;
        if (charset != null || writer != null) return contentType + ";charset=" + getCharacterEncoding();
        return contentType;
    }

    @Override
    public ServletOutputStream getOutputStream() throws IOException {
        if (writer != null) throw new IllegalStateException("afterburn-servlet: getWriter() was called before getOutputStream()");
        streamUsed = true;
        return output;
    }

    @Override
    public PrintWriter getWriter() throws IOException {
        if (writer != null) return writer;
        if (streamUsed) throw new IllegalStateException("afterburn-servlet: getOutputStream() was called before getWriter()");
        Charset cs;
        try {
            cs = Charset.forName(getCharacterEncoding());
        } catch (IllegalCharsetNameException | UnsupportedCharsetException e) {
            throw new java.io.UnsupportedEncodingException(getCharacterEncoding());
        }
        if (charset == null) charset = cs.name(); // fixed from here (§5.6)
        writer = new PrintWriter(new OutputStreamWriter(output, cs), false) {
            /** Closing the writer ends the body like closing the stream: uncommitted, it keeps its Content-Length. */
            @Override
            public void close() {
                try {
                    output.drain(this);
                    output.close();
                } catch (IOException e) {
                    setError();
                }
            }
        };
        return writer;
    }

    @Override
    public void setCharacterEncoding(String encoding) {
        if (committedOrSuspended() || writer != null) return;
        charset = encoding;
    }

    @Override
    public void setContentLength(int len) {
        setContentLengthLong(len);
    }

    @Override
    public void setContentLengthLong(long len) {
        if (committedOrSuspended()) return;
        if (len < 0) fields.removeIf(f -> f[0].equalsIgnoreCase("Content-Length"));
        else setHeader("Content-Length", Long.toString(len));
    }

    @Override
    public void setContentType(String type) {
        if (committedOrSuspended()) return;
        if (type == null) {
            contentType = null;
            contentTypeAsSet = null;
            if (writer == null) charset = null;
            return;
        }
        int semi = type.indexOf(';');
        contentType = (semi < 0 ? type : type.substring(0, semi)).strip();
        String named = null;
        if (semi >= 0) {
            for (String param : type.substring(semi + 1).split(";")) {
                int eq = param.indexOf('=');
                if (eq > 0 && param.substring(0, eq).strip().equalsIgnoreCase("charset")) {
                    named = param.substring(eq + 1).strip().replace("\"", "");
                }
            }
        }
        if (named != null && writer == null) charset = named;
        contentTypeAsSet = named == null || writer == null ? type.strip() : null;
        charsetAsSet = named;
    }

    @Override
    public void setBufferSize(int size) {
        output.bufferSize(size);
    }

    @Override
    public int getBufferSize() {
        return output.bufferSize();
    }

    @Override
    public void flushBuffer() throws IOException {
        if (writer != null) writer.flush();
        output.flush();
    }

    @Override
    public void resetBuffer() {
        output.resetBuffer();
    }

    /** Clears status, fields, cookies and the buffer, and the choice of writer or stream (Servlet 6 §5.1). */
    @Override
    public void reset() {
        if (output.committed()) throw new IllegalStateException("afterburn-servlet: reset after the response was committed");
        output.resetBuffer();
        output.reopen();
        status = 200;
        fields.clear();
        cookies.clear();
        contentType = null;
        contentTypeAsSet = null;
        charsetAsSet = null;
        charset = null;
        writer = null;
        streamUsed = false;
        redirected = false;
        errorStatus = -1;
        errorMessage = null;
        trailers = null;
    }

    @Override
    public void setLocale(Locale loc) {
        if (committedOrSuspended() || loc == null) return;
        locale = loc;
        localeSet = true;
    }

    @Override
    public Locale getLocale() {
        return locale;
    }
}
