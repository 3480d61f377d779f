package dev.afterburn.shapes;

import dev.afterburn.runtime.Headers;
import dev.afterburn.runtime.Request;
import dev.afterburn.runtime.Response;
import io.cloudevents.CloudEvent;
import io.cloudevents.SpecVersion;
import io.cloudevents.core.builder.CloudEventBuilder;
import io.cloudevents.core.format.EventFormat;
import io.cloudevents.core.provider.EventFormatProvider;
import io.cloudevents.types.Time;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.time.OffsetDateTime;
import java.util.Base64;
import java.util.HashSet;
import java.util.Locale;
import java.util.Set;

/**
 * The HTTP protocol binding of CloudEvents 1.0 (PROTOCOL.md §13, {@code cloudevents}), onto the
 * CloudEvents SDK's own types: a request read into an SDK {@link CloudEvent} (binary or
 * structured mode), an SDK event written as a response (binary mode). Held to
 * {@code conformance/shapes/cloudevents.json}.
 *
 * <p>Why not the SDK's HTTP readers: {@code cloudevents-http-basic} is one more artefact a
 * function would need, and it takes any request without {@code ce-specversion} for a
 * structured one; the binding is a page here and the event is the SDK's.
 */
final class CloudEventsHttp {
    private CloudEventsHttp() {}

    static final String STRUCTURED = "application/cloudevents+json";
    private static final String BATCH = "application/cloudevents-batch+json";

    /** The request does not make a CloudEvent: the client's fault, 400 (§13). */
    static final class NotAnEvent extends Exception {
        private static final long serialVersionUID = 1L;

        NotAnEvent(String message) {
            super(message);
        }
    }

    static String media(String contentType) {
        if (contentType == null) return "";
        int semi = contentType.indexOf(';');
        return (semi < 0 ? contentType : contentType.substring(0, semi)).trim().toLowerCase(Locale.ROOT);
    }

    /**
     * The event a request carries: binary mode when it has a {@code ce-specversion} field
     * (attributes from the {@code ce-*} fields, percent-decoded; {@code datacontenttype} from
     * {@code Content-Type}; the body as the data), else structured mode for an
     * {@code application/cloudevents+json} body (read by the SDK's JSON format,
     * {@code cloudevents-json-jackson}). Anything else, a {@code specversion} other than
     * {@code 1.0}, a missing or empty {@code id}, {@code source} or {@code type}, an attribute
     * name that is not lower-case letters and digits, or an attribute value that does not parse
     * (a {@code time}, a URI) is not an event. Batch mode is not read.
     */
    static CloudEvent read(Request request, byte[] body) throws NotAnEvent {
        Headers headers = request.headers();
        String contentType = headers.first("Content-Type");
        CloudEvent event;
        if (headers.contains("ce-specversion")) {
            event = binary(headers, contentType, body);
        } else if (media(contentType).equals(STRUCTURED)) {
            event = structured(body);
        } else if (media(contentType).equals(BATCH)) {
            throw new NotAnEvent("batch mode (" + BATCH + ") is not read: send one event per request");
        } else {
            throw new NotAnEvent("neither a ce-specversion field (binary mode) nor an " + STRUCTURED
                    + " body (structured mode)");
        }
        if (event.getSpecVersion() != SpecVersion.V1) throw new NotAnEvent("specversion " + event.getSpecVersion() + " is not 1.0");
        if (event.getId() == null || event.getId().isEmpty()) throw new NotAnEvent("the required attribute id is empty");
        if (event.getType() == null || event.getType().isEmpty()) throw new NotAnEvent("the required attribute type is empty");
        if (event.getSource() == null || event.getSource().toString().isEmpty()) {
            throw new NotAnEvent("the required attribute source is empty");
        }
        return event;
    }

    private static CloudEvent binary(Headers headers, String contentType, byte[] body) throws NotAnEvent {
        String version = percentDecode(headers.first("ce-specversion"));
        if (!"1.0".equals(version)) throw new NotAnEvent("specversion \"" + version + "\" is not 1.0");
        CloudEventBuilder b = CloudEventBuilder.v1();
        Set<String> seen = new HashSet<>();
        try {
            for (Headers.Field f : headers) {
                String name = f.name().toLowerCase(Locale.ROOT);
                if (!name.startsWith("ce-")) continue;
                String attribute = name.substring(3);
                if (attribute.equals("specversion") || !seen.add(attribute)) continue; // the first of a name, as §4.2 reads one value
                if (!isAttributeName(attribute)) throw new NotAnEvent("attribute name \"" + attribute + "\" is not lower-case letters and digits");
                if (attribute.equals("datacontenttype")) continue; // binary mode: Content-Type is datacontenttype
                b.withContextAttribute(attribute, percentDecode(f.value()));
            }
            if (contentType != null) b.withDataContentType(contentType);
            if (body.length > 0) b.withData(body);
            return b.build();
        } catch (RuntimeException e) { // CloudEventRWException for a bad time or URI; IllegalStateException for a missing one
            throw new NotAnEvent(e.getMessage());
        }
    }

    private static CloudEvent structured(byte[] body) throws NotAnEvent {
        EventFormat format = EventFormatProvider.getInstance().resolveFormat(STRUCTURED);
        if (format == null) {
            // The function's build lacks the format: its fault, not the client's (500, logged).
            throw new IllegalStateException("cloudevents: no EventFormat for " + STRUCTURED
                    + " on the classpath: add io.cloudevents:cloudevents-json-jackson");
        }
        try {
            return format.deserialize(body);
        } catch (RuntimeException e) { // EventDeserializationException, IllegalStateException
            throw new NotAnEvent("the structured-mode body is not an event: " + e.getMessage());
        }
    }

    static boolean isAttributeName(String name) {
        if (name.isEmpty()) return false;
        for (int i = 0; i < name.length(); i++) {
            char c = name.charAt(i);
            if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'))) return false;
        }
        return true;
    }

    /**
     * An event in binary mode: {@code 200}, a {@code ce-*} field per attribute and extension
     * (its canonical string, percent-encoded as the binding asks), {@code Content-Type} from
     * {@code datacontenttype}, the data as the body.
     */
    static Response write(CloudEvent event) {
        Response r = Response.ok().header("ce-specversion", event.getSpecVersion().toString());
        for (String name : event.getAttributeNames()) {
            if (name.equals("specversion") || name.equals("datacontenttype")) continue;
            Object value = event.getAttribute(name);
            if (value != null) r.header("ce-" + name, percentEncode(canonical(value)));
        }
        for (String name : event.getExtensionNames()) {
            Object value = event.getExtension(name);
            if (value != null) r.header("ce-" + name, percentEncode(canonical(value)));
        }
        if (event.getDataContentType() != null) r.header("Content-Type", event.getDataContentType());
        return r.body(event.getData() == null ? new byte[0] : event.getData().toBytes());
    }

    /** The JSON format's string form of an attribute value (CloudEvents 1.0 §3, type system). */
    static String canonical(Object value) {
        if (value instanceof OffsetDateTime) return Time.writeTime((OffsetDateTime) value);
        if (value instanceof byte[]) return Base64.getEncoder().encodeToString((byte[]) value);
        return value.toString();
    }

    /** HTTP binding §3.1.3.2: space, '"', '%' and every character outside printable ASCII, as UTF-8 bytes. */
    static String percentEncode(String s) {
        StringBuilder sb = null;
        byte[] bytes = s.getBytes(StandardCharsets.UTF_8);
        for (int i = 0; i < bytes.length; i++) {
            int b = bytes[i] & 0xff;
            boolean plain = b > 0x20 && b < 0x7f && b != '"' && b != '%';
            if (plain && sb == null) continue;
            if (sb == null) {
                sb = new StringBuilder(bytes.length + 16);
                sb.append(new String(bytes, 0, i, StandardCharsets.US_ASCII));
            }
            if (plain) sb.append((char) b);
            else sb.append('%').append(Character.toUpperCase(Character.forDigit(b >> 4, 16)))
                    .append(Character.toUpperCase(Character.forDigit(b & 0xf, 16)));
        }
        return sb == null ? s : sb.toString();
    }

    /** Percent-decoding to UTF-8; a malformed escape is kept as it is. */
    static String percentDecode(String s) {
        if (s == null || s.indexOf('%') < 0) return s;
        ByteArrayOutputStream out = new ByteArrayOutputStream(s.length());
        byte[] in = s.getBytes(StandardCharsets.UTF_8);
        for (int i = 0; i < in.length; i++) {
            if (in[i] == '%' && i + 2 < in.length && Character.digit(in[i + 1], 16) >= 0 && Character.digit(in[i + 2], 16) >= 0) {
                out.write(Character.digit(in[i + 1], 16) << 4 | Character.digit(in[i + 2], 16));
                i += 2;
            } else {
                out.write(in[i]);
            }
        }
        return out.toString(StandardCharsets.UTF_8);
    }
}
