package dev.afterburn.servlet;

import jakarta.servlet.ServletContext;
import jakarta.servlet.SessionCookieConfig;
import jakarta.servlet.http.HttpSession;
import jakarta.servlet.http.HttpSessionBindingEvent;
import jakarta.servlet.http.HttpSessionBindingListener;
import jakarta.servlet.http.HttpSessionEvent;
import jakarta.servlet.http.HttpSessionListener;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Enumeration;
import java.util.HexFormat;
import java.util.Iterator;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

/**
 * HTTP sessions kept in this worker's memory, tracked by cookie. <b>A session lives in one
 * worker</b>: the watchdog does not route by session, and a worker that is replaced loses its
 * sessions (README, "What does not fit a pipe"). Expired sessions are dropped on access and in a
 * sweep every 1024 requests.
 */
final class Sessions {
    private static final SecureRandom RANDOM = new SecureRandom();

    private final PipeContext context;
    private final Map<String, Session> byId = new ConcurrentHashMap<>();
    private final AtomicLong requests = new AtomicLong();
    final CookieConfig cookieConfig = new CookieConfig();
    private volatile int timeoutMinutes = 30;

    Sessions(PipeContext context) {
        this.context = context;
    }

    int timeoutMinutes() {
        return timeoutMinutes;
    }

    void timeoutMinutes(int minutes) {
        this.timeoutMinutes = minutes;
    }

    static String newId() {
        byte[] b = new byte[16];
        RANDOM.nextBytes(b);
        return HexFormat.of().withUpperCase().formatHex(b);
    }

    /** The live session of this id, touched; null when unknown or expired. */
    Session find(String id) {
        if (requests.incrementAndGet() % 1024 == 0) sweep();
        if (id == null) return null;
        Session s = byId.get(id);
        if (s == null) return null;
        if (s.expired(System.currentTimeMillis())) {
            s.invalidate();
            return null;
        }
        return s;
    }

    Session create() {
        Session s = new Session(newId(), timeoutMinutes * 60);
        byId.put(s.id, s);
        HttpSessionEvent ev = new HttpSessionEvent(s);
        for (HttpSessionListener l : context.sessionListeners) l.sessionCreated(ev);
        return s;
    }

    String changeId(Session s) {
        String old = s.id;
        byId.remove(old);
        s.id = newId();
        byId.put(s.id, s);
        HttpSessionEvent ev = new HttpSessionEvent(s);
        for (jakarta.servlet.http.HttpSessionIdListener l : context.sessionIdListeners) l.sessionIdChanged(ev, old);
        return s.id;
    }

    private void sweep() {
        long now = System.currentTimeMillis();
        for (Iterator<Session> it = byId.values().iterator(); it.hasNext(); ) {
            Session s = it.next();
            if (s.expired(now)) s.invalidate();
        }
    }

    void invalidateAll() {
        for (Session s : new ArrayList<>(byId.values())) s.invalidate();
    }

    /** One session. */
    final class Session implements HttpSession {
        volatile String id;
        private final long created = System.currentTimeMillis();
        private volatile long lastAccessed = created;
        private volatile long thisAccess = created;
        private volatile int maxInactiveSeconds;
        private volatile boolean valid = true;
        volatile boolean isNew = true;
        private final Map<String, Object> attributes = new ConcurrentHashMap<>();

        Session(String id, int maxInactiveSeconds) {
            this.id = id;
            this.maxInactiveSeconds = maxInactiveSeconds;
        }

        boolean expired(long now) {
            return maxInactiveSeconds > 0 && now - thisAccess > maxInactiveSeconds * 1000L;
        }

        /** A request joined this session (Servlet 6 §7.6: last accessed is the previous request's time). */
        void access() {
            lastAccessed = thisAccess;
            thisAccess = System.currentTimeMillis();
            isNew = false;
        }

        private void check() {
            if (!valid) throw new IllegalStateException("afterburn-servlet: the session " + id + " was invalidated");
        }

        boolean valid() {
            return valid;
        }

        @Override
        public long getCreationTime() {
            check();
            return created;
        }

        @Override
        public String getId() {
            return id;
        }

        @Override
        public long getLastAccessedTime() {
            check();
            return lastAccessed;
        }

        @Override
        public ServletContext getServletContext() {
            return context;
        }

        @Override
        public void setMaxInactiveInterval(int interval) {
            this.maxInactiveSeconds = interval;
        }

        @Override
        public int getMaxInactiveInterval() {
            return maxInactiveSeconds;
        }

        @Override
        public Object getAttribute(String name) {
            check();
            return attributes.get(name);
        }

        @Override
        public Enumeration<String> getAttributeNames() {
            check();
            return Collections.enumeration(new ArrayList<>(attributes.keySet()));
        }

        @Override
        public void setAttribute(String name, Object value) {
            check();
            if (value == null) {
                removeAttribute(name);
                return;
            }
            Object old = attributes.put(name, value);
            if (value instanceof HttpSessionBindingListener && value != old) {
                ((HttpSessionBindingListener) value).valueBound(new HttpSessionBindingEvent(this, name, value));
            }
            if (old instanceof HttpSessionBindingListener && old != value) {
                ((HttpSessionBindingListener) old).valueUnbound(new HttpSessionBindingEvent(this, name, old));
            }
            for (jakarta.servlet.http.HttpSessionAttributeListener l : context.sessionAttributeListeners) {
                if (old == null) l.attributeAdded(new HttpSessionBindingEvent(this, name, value));
                else l.attributeReplaced(new HttpSessionBindingEvent(this, name, old));
            }
        }

        @Override
        public void removeAttribute(String name) {
            check();
            Object old = attributes.remove(name);
            if (old == null) return;
            if (old instanceof HttpSessionBindingListener) {
                ((HttpSessionBindingListener) old).valueUnbound(new HttpSessionBindingEvent(this, name, old));
            }
            for (jakarta.servlet.http.HttpSessionAttributeListener l : context.sessionAttributeListeners) {
                l.attributeRemoved(new HttpSessionBindingEvent(this, name, old));
            }
        }

        @Override
        public void invalidate() {
            check();
            valid = false;
            byId.remove(id, this);
            HttpSessionEvent ev = new HttpSessionEvent(this);
            for (HttpSessionListener l : context.sessionListeners) l.sessionDestroyed(ev);
            for (String name : new ArrayList<>(attributes.keySet())) {
                Object old = attributes.remove(name);
                if (old instanceof HttpSessionBindingListener) {
                    ((HttpSessionBindingListener) old).valueUnbound(new HttpSessionBindingEvent(this, name, old));
                }
            }
        }

        @Override
        public boolean isNew() {
            check();
            return isNew;
        }
    }

    /** The session cookie's settings (Servlet 6 §7.1.1); changeable until the context starts. */
    final class CookieConfig implements SessionCookieConfig {
        private String name = "JSESSIONID";
        private final Map<String, String> attributes = new TreeMap<>(String.CASE_INSENSITIVE_ORDER);

        CookieConfig() {
            attributes.put("HttpOnly", "");
        }

        private void open() {
            context.checkNotStarted();
        }

        @Override
        public void setName(String name) {
            open();
            this.name = name;
        }

        @Override
        public String getName() {
            return name;
        }

        @Override
        public void setDomain(String domain) {
            setAttribute("Domain", domain);
        }

        @Override
        public String getDomain() {
            return attributes.get("Domain");
        }

        @Override
        public void setPath(String path) {
            setAttribute("Path", path);
        }

        @Override
        public String getPath() {
            return attributes.get("Path");
        }

        @Override
        @SuppressWarnings({"deprecation", "removal"})
        public void setComment(String comment) {
            open();
        }

        @Override
        @SuppressWarnings({"deprecation", "removal"})
        public String getComment() {
            return null;
        }

        @Override
        public void setHttpOnly(boolean httpOnly) {
            setAttribute("HttpOnly", httpOnly ? "" : null);
        }

        @Override
        public boolean isHttpOnly() {
            return attributes.containsKey("HttpOnly");
        }

        @Override
        public void setSecure(boolean secure) {
            setAttribute("Secure", secure ? "" : null);
        }

        @Override
        public boolean isSecure() {
            return attributes.containsKey("Secure");
        }

        @Override
        public void setMaxAge(int maxAge) {
            setAttribute("Max-Age", Integer.toString(maxAge));
        }

        @Override
        public int getMaxAge() {
            String v = attributes.get("Max-Age");
            return v == null ? -1 : Integer.parseInt(v);
        }

        @Override
        public void setAttribute(String n, String value) {
            open();
            if (value == null) attributes.remove(n);
            else attributes.put(n, value);
        }

        @Override
        public String getAttribute(String n) {
            return attributes.get(n);
        }

        @Override
        public Map<String, String> getAttributes() {
            return Collections.unmodifiableMap(attributes);
        }

        /** The Set-Cookie value for a session id; the path defaults to the context path or /. */
        String setCookie(String id, String contextPath) {
            StringBuilder sb = new StringBuilder(name).append('=').append(id);
            if (!attributes.containsKey("Path")) sb.append("; Path=").append(contextPath.isEmpty() ? "/" : contextPath);
            for (Map.Entry<String, String> a : attributes.entrySet()) {
                sb.append("; ").append(a.getKey());
                if (!a.getValue().isEmpty()) sb.append('=').append(a.getValue());
            }
            return sb.toString();
        }
    }
}
