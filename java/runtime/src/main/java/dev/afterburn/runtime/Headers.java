package dev.afterburn.runtime;

import java.util.ArrayList;
import java.util.Collections;
import java.util.Iterator;
import java.util.List;

/**
 * An ordered, immutable list of HTTP fields. Repeated fields keep every value, in the order
 * they were sent (PROTOCOL.md §4.2); names keep the case they were sent with and are
 * matched case-insensitively (RFC 9110 §5.1).
 *
 * <pre>{@code
 * String type = request.headers().first("content-type");         // null when absent
 * List<String> languages = request.headers().all("Accept-Language");
 * for (Headers.Field f : request.headers()) System.err.println(f.name() + ": " + f.value());
 * }</pre>
 */
public final class Headers implements Iterable<Headers.Field> {
    /** One field line: a name and its value, without surrounding whitespace. */
    public record Field(String name, String value) {}

    private static final Headers EMPTY = new Headers(List.of());

    private final List<Field> fields;

    Headers(List<Field> fields) {
        this.fields = Collections.unmodifiableList(fields);
    }

    /** No fields. */
    public static Headers empty() {
        return EMPTY;
    }

    /**
     * Fields from alternating names and values: {@code Headers.of("Accept", "text/plain",
     * "Accept-Language", "en")}.
     *
     * @param namesAndValues name, value, name, value, …
     * @return the fields, in the order given
     */
    public static Headers of(String... namesAndValues) {
        if (namesAndValues.length % 2 != 0) throw new IllegalArgumentException("names and values must alternate");
        List<Field> list = new ArrayList<>(namesAndValues.length / 2);
        for (int i = 0; i < namesAndValues.length; i += 2) {
            list.add(new Field(namesAndValues[i], namesAndValues[i + 1]));
        }
        return new Headers(list);
    }

    /**
     * The first value of a field.
     *
     * @param name the field name, in any case
     * @return its first value, or null when the field is absent
     */
    public String first(String name) {
        for (Field f : fields) {
            if (f.name.equalsIgnoreCase(name)) return f.value;
        }
        return null;
    }

    /**
     * Every value of a field, in order.
     *
     * @param name the field name, in any case
     * @return its values; empty when the field is absent
     */
    public List<String> all(String name) {
        List<String> values = new ArrayList<>(2);
        for (Field f : fields) {
            if (f.name.equalsIgnoreCase(name)) values.add(f.value);
        }
        return values;
    }

    /**
     * Whether a field is present.
     *
     * @param name the field name, in any case
     * @return true when at least one line carries it
     */
    public boolean contains(String name) {
        return first(name) != null;
    }

    /** @return every field line, in order */
    public List<Field> fields() {
        return fields;
    }

    /** @return the number of field lines */
    public int size() {
        return fields.size();
    }

    @Override
    public Iterator<Field> iterator() {
        return fields.iterator();
    }

    @Override
    public String toString() {
        return fields.toString();
    }
}
