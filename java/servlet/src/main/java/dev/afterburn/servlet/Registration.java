package dev.afterburn.servlet;

import jakarta.servlet.ServletContext;
import java.util.Collections;
import java.util.Enumeration;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;

/**
 * What a registered servlet and a registered filter have in common (Servlet 6 §4.4.3,
 * §4.4.2): the name, the class, the init parameters a registration sets and a config reads, and
 * whether it supports async. ServletEntry and FilterEntry add what is theirs.
 */
abstract class Registration {
    final PipeContext context;
    private final String name;
    private final Class<?> type; // the class to make when no instance was given
    final Map<String, String> initParameters = new LinkedHashMap<>();
    boolean asyncSupported;

    Registration(PipeContext context, String name, Class<?> type) {
        this.context = context;
        this.name = name;
        this.type = type;
    }

    /** The servlet or filter given, or made; null until it is made. */
    abstract Object instance();

    public String getName() {
        return name;
    }

    public String getClassName() {
        Object made = instance();
        return made != null ? made.getClass().getName() : type.getName();
    }

    public void setAsyncSupported(boolean supported) {
        context.checkNotStarted();
        this.asyncSupported = supported;
    }

    public boolean setInitParameter(String n, String value) {
        context.checkNotStarted();
        if (n == null || value == null) throw new IllegalArgumentException("init parameter name and value must not be null");
        return initParameters.putIfAbsent(n, value) == null;
    }

    public String getInitParameter(String n) {
        return initParameters.get(n);
    }

    public Set<String> setInitParameters(Map<String, String> parameters) {
        Set<String> conflicts = new HashSet<>();
        for (Map.Entry<String, String> e : parameters.entrySet()) {
            if (initParameters.containsKey(e.getKey())) conflicts.add(e.getKey());
        }
        if (conflicts.isEmpty()) parameters.forEach(this::setInitParameter);
        return conflicts;
    }

    public Map<String, String> getInitParameters() {
        return Collections.unmodifiableMap(initParameters);
    }

    public ServletContext getServletContext() {
        return context;
    }

    public Enumeration<String> getInitParameterNames() {
        return Collections.enumeration(initParameters.keySet());
    }
}
