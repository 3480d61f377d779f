package dev.afterburn.servlet;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.afterburn.runtime.Request;
import dev.afterburn.runtime.TestRequest;
import dev.afterburn.runtime.TestResponse;
import jakarta.servlet.AsyncContext;
import jakarta.servlet.AsyncEvent;
import jakarta.servlet.AsyncListener;
import jakarta.servlet.DispatcherType;
import jakarta.servlet.RequestDispatcher;
import jakarta.servlet.ServletContextEvent;
import jakarta.servlet.ServletContextListener;
import jakarta.servlet.ServletException;
import jakarta.servlet.http.Cookie;
import jakarta.servlet.http.HttpServlet;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.EnumSet;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.Test;

/** The request and response a servlet sees, through the runtime's in-process TestRequest (bytes both ways). */
class ServletContainerTest {
    private static TestResponse call(ServletContainer c, TestRequest r) {
        return r.call(c.handler());
    }

    private static ServletContainer one(Fn.Service s) throws ServletException {
        return ServletContainer.of(Fn.servlet(s));
    }

    @Test
    void headersQueryAndPathReachTheServlet() throws Exception {
        ServletContainer c = one((req, resp) -> {
            resp.setContentType("text/plain;charset=UTF-8");
            resp.getWriter().print(req.getMethod() + " " + req.getRequestURI() + " ? " + req.getQueryString()
                    + " | " + req.getServletPath() + " | " + req.getPathInfo()
                    + " | " + req.getHeader("x-a") + " " + Collections.list(req.getHeaders("X-A"))
                    + " | " + req.getParameter("q") + " " + Arrays.toString(req.getParameterValues("t"))
                    + " | " + req.getServerName() + ":" + req.getServerPort() + " " + req.getRequestURL());
        });
        TestResponse r = call(c, TestRequest.get("/a/b%20c?q=caf%C3%A9+x&t=1&t=2").header("Host", "fn.example:8443")
                .header("X-A", "1").header("X-A", "2"));
        assertEquals(200, r.status());
        assertEquals("GET /a/b%20c ? q=caf%C3%A9+x&t=1&t=2 |  | /a/b c | 1 [1, 2] | café x [1, 2] | fn.example:8443 http://fn.example:8443/a/b%20c",
                r.bodyText());
    }

    @Test
    void aSmallResponseGoesOutWithItsContentLength() throws Exception {
        ServletContainer c = one((req, resp) -> {
            resp.setStatus(201);
            resp.setHeader("X-One", "1");
            resp.addHeader("X-Two", "a");
            resp.addHeader("X-Two", "b");
            resp.getOutputStream().write("made".getBytes(StandardCharsets.US_ASCII));
        });
        TestResponse r = call(c, TestRequest.get("/"));
        assertEquals(201, r.status());
        assertEquals("4", r.headers().first("content-length"));
        assertNull(r.headers().first("transfer-encoding"));
        assertEquals(List.of("a", "b"), r.headers().all("x-two"));
        assertEquals("made", r.bodyText());
    }

    @Test
    void aResponseLargerThanTheBufferIsChunkedAndComplete() throws Exception {
        byte[] big = new byte[100_000];
        for (int i = 0; i < big.length; i++) big[i] = (byte) (i % 251);
        ServletContainer c = one((req, resp) -> resp.getOutputStream().write(big));
        TestResponse r = call(c, TestRequest.get("/"));
        assertEquals("chunked", r.headers().first("transfer-encoding"));
        assertTrue(Arrays.equals(big, r.body()));
        assertTrue(r.complete());
    }

    @Test
    void flushCommitsTheHeadAndLaterFieldsAreIgnored() throws Exception {
        ServletContainer c = one((req, resp) -> {
            resp.setStatus(202);
            resp.getWriter().print("one");
            resp.flushBuffer();
            assertTrue(resp.isCommitted());
            resp.setStatus(500);
            resp.setHeader("X-Late", "1");
            resp.getWriter().print("two");
        });
        TestResponse r = call(c, TestRequest.get("/"));
        assertEquals(202, r.status());
        assertNull(r.headers().first("x-late"));
        assertEquals("onetwo", r.bodyText());
    }

    @Test
    void aPostedFormIsParameters() throws Exception {
        ServletContainer c = one((req, resp) -> resp.getOutputStream().write((req.getParameterMap().keySet() + " "
                + req.getParameter("name") + " " + Arrays.toString(req.getParameterValues("x"))).getBytes(StandardCharsets.UTF_8)));
        TestResponse r = call(c, TestRequest.post("/?x=q").header("Content-Type", "application/x-www-form-urlencoded; charset=UTF-8")
                .body("name=J%C3%BCrgen+B&x=b"));
        assertEquals("[x, name] Jürgen B [q, b]", r.bodyText());
    }

    @Test
    void aFormWithoutCharsetIsReadAsIso8859_1UnlessTheRequestSaysOtherwise() throws Exception {
        ServletContainer c = one((req, resp) -> {
            if ("1".equals(req.getQueryString())) req.setCharacterEncoding("UTF-8");
            resp.setCharacterEncoding("UTF-8");
            resp.getWriter().print(req.getParameter("v"));
        });
        assertEquals("Ã¼", call(c, TestRequest.post("/").header("Content-Type", "application/x-www-form-urlencoded").body("v=%C3%BC")).bodyText());
        assertEquals("ü", call(c, TestRequest.post("/?1").header("Content-Type", "application/x-www-form-urlencoded").body("v=%C3%BC")).bodyText());
    }

    @Test
    void theBodyStreamsThroughTheInputStreamAndReader() throws Exception {
        ServletContainer c = one((req, resp) -> {
            if (req.getPathInfo().equals("/reader")) {
                resp.setCharacterEncoding("UTF-8");
                resp.getWriter().print(req.getReader().readLine() + "|" + req.getContentLength());
            } else {
                req.getInputStream().transferTo(resp.getOutputStream());
            }
        });
        assertEquals("hello body", call(c, TestRequest.post("/stream").body("hello body")).bodyText());
        assertEquals("größe|7", call(c, TestRequest.post("/reader").header("Content-Type", "text/plain; charset=utf-8").body("größe")).bodyText());
    }

    @Test
    void theWriterEncodesWithTheResponseCharset() throws Exception {
        ServletContainer c = one((req, resp) -> {
            resp.setContentType(req.getPathInfo().equals("/utf8") ? "text/plain;charset=UTF-8" : "text/plain");
            PrintWriter w = resp.getWriter();
            w.print("é");
        });
        TestResponse utf8 = call(c, TestRequest.get("/utf8"));
        assertEquals("text/plain;charset=UTF-8", utf8.headers().first("content-type"));
        assertTrue(Arrays.equals(new byte[] {(byte) 0xC3, (byte) 0xA9}, utf8.body()));
        TestResponse latin1 = call(c, TestRequest.get("/latin1"));
        assertEquals("text/plain;charset=ISO-8859-1", latin1.headers().first("content-type"), "Servlet 6 §5.6: the default");
        assertTrue(Arrays.equals(new byte[] {(byte) 0xE9}, latin1.body()));
    }

    @Test
    void aContentTypeIsSentAsSetWhileItsCharsetStands() throws Exception {
        ServletContainer c = one((req, resp) -> {
            switch (req.getPathInfo()) {
                case "/as-set" -> resp.setContentType("text/plain; charset=utf-8");
                case "/changed" -> {
                    resp.setContentType("application/json");
                    resp.setCharacterEncoding("UTF-8");
                }
                default -> {
                    resp.setContentType("text/html; charset=utf-8");
                    resp.getWriter().print("x"); // the writer keeps the charset it was set with
                }
            }
        });
        assertEquals("text/plain; charset=utf-8", call(c, TestRequest.get("/as-set")).headers().first("content-type"));
        assertEquals("application/json;charset=UTF-8", call(c, TestRequest.get("/changed")).headers().first("content-type"));
        assertEquals("text/html; charset=utf-8", call(c, TestRequest.get("/writer")).headers().first("content-type"));
    }

    @Test
    void sendErrorWithoutAnErrorPageWritesAShortTextBody() throws Exception {
        ServletContainer c = one((req, resp) -> {
            resp.setHeader("X-Kept", "yes");
            resp.getWriter().print("dropped");
            resp.sendError(404, "no such order");
            resp.getWriter().print("also dropped");
        });
        TestResponse r = call(c, TestRequest.get("/"));
        assertEquals(404, r.status());
        assertEquals("404 no such order\n", r.bodyText());
        assertEquals("yes", r.headers().first("x-kept"));
        assertEquals("text/plain;charset=UTF-8", r.headers().first("content-type"));
    }

    @Test
    void sendErrorDispatchesToTheErrorPageWithTheAttributes() throws Exception {
        ServletContainer c = ServletContainer.create();
        c.addServlet("app", Fn.servlet((req, resp) -> resp.sendError(409, "taken")), "/app/*");
        c.addServlet("error", Fn.servlet((req, resp) -> resp.getWriter().print(req.getDispatcherType() + " "
                + req.getAttribute(RequestDispatcher.ERROR_STATUS_CODE) + " " + req.getAttribute(RequestDispatcher.ERROR_MESSAGE)
                + " " + req.getAttribute(RequestDispatcher.ERROR_REQUEST_URI) + " " + req.getRequestURI())), "/error");
        c.errorPage("/error");
        c.start();
        TestResponse r = call(c, TestRequest.get("/app/x"));
        assertEquals(409, r.status());
        assertEquals("ERROR 409 taken /app/x /error", r.bodyText());
    }

    @Test
    void anUnmappedPathIs404() throws Exception {
        ServletContainer c = ServletContainer.create();
        c.addServlet("x", Fn.servlet((req, resp) -> {}), "/x");
        c.start();
        assertEquals(404, call(c, TestRequest.get("/y")).status());
    }

    @Test
    void aPathOutsideTheContextIs404AndInsideItIsMapped() throws Exception {
        ServletContainer c = ServletContainer.create("/shop");
        c.addServlet("x", Fn.servlet((req, resp) -> resp.getWriter().print(req.getContextPath() + "|" + req.getServletPath() + "|" + req.getPathInfo())), "/*");
        c.start();
        assertEquals(404, call(c, TestRequest.get("/other")).status());
        assertEquals("/shop||/cart", call(c, TestRequest.get("/shop/cart")).bodyText());
    }

    @Test
    void aPathThatLeavesTheRootIs400() throws Exception {
        TestResponse r = call(one((req, resp) -> {}), TestRequest.get("/a/../../etc/passwd"));
        assertEquals(400, r.status());
    }

    @Test
    void redirectsAreRelativeToTheRequestOrAsGiven() throws Exception {
        ServletContainer c = one((req, resp) -> resp.sendRedirect(req.getParameter("to")));
        TestResponse rel = call(c, TestRequest.get("/orders/42/edit?to=view"));
        assertEquals(302, rel.status());
        assertEquals("/orders/42/view", rel.headers().first("location"));
        assertEquals("0", rel.headers().first("content-length"));
        assertEquals("/login", call(c, TestRequest.get("/x?to=/login")).headers().first("location"));
        assertEquals("https://example.com/a", call(c, TestRequest.get("/x?to=https://example.com/a")).headers().first("location"));
    }

    @Test
    void cookiesComeInAndGoOut() throws Exception {
        ServletContainer c = one((req, resp) -> {
            StringBuilder sb = new StringBuilder();
            for (Cookie k : req.getCookies()) sb.append(k.getName()).append('=').append(k.getValue()).append(';');
            Cookie out = new Cookie("theme", "dark");
            out.setPath("/");
            out.setHttpOnly(true);
            out.setMaxAge(60);
            out.setAttribute("SameSite", "Lax");
            resp.addCookie(out);
            resp.getWriter().print(sb);
        });
        TestResponse r = call(c, TestRequest.get("/").header("Cookie", "a=1; b=\"two\"").header("Cookie", "c=3"));
        assertEquals("a=1;b=two;c=3;", r.bodyText());
        String set = r.headers().first("set-cookie");
        assertTrue(set.startsWith("theme=dark; Max-Age=60; Expires="), set);
        assertTrue(set.endsWith("; Path=/; HttpOnly; SameSite=Lax"), set);
    }

    @Test
    void aCookieValueThatWouldSplitTheFieldIsRefused() throws Exception {
        ServletContainer c = one((req, resp) -> resp.addCookie(new Cookie("a", "x;y")));
        TestResponse r = call(c, TestRequest.get("/"));
        assertEquals(500, r.status(), "the servlet's IllegalArgumentException is a handler error");
    }

    @Test
    void aSessionLivesAcrossRequestsOfThisWorker() throws Exception {
        ServletContainer c = one((req, resp) -> {
            var s = req.getSession();
            Integer n = (Integer) s.getAttribute("n");
            s.setAttribute("n", n == null ? 1 : n + 1);
            resp.getWriter().print(s.getAttribute("n") + " " + s.isNew());
        });
        TestResponse first = call(c, TestRequest.get("/"));
        assertEquals("1 true", first.bodyText());
        String cookie = first.headers().first("set-cookie");
        assertTrue(cookie.matches("JSESSIONID=[0-9A-F]{32}; Path=/; HttpOnly"), cookie);
        TestResponse second = call(c, TestRequest.get("/").header("Cookie", cookie.substring(0, cookie.indexOf(';'))));
        assertEquals("2 false", second.bodyText());
        assertNull(second.headers().first("set-cookie"));
    }

    @Test
    void filtersRunInOrderAndCanEndTheChain() throws Exception {
        List<String> seen = Collections.synchronizedList(new ArrayList<>());
        ServletContainer c = ServletContainer.create();
        c.addFilter("first", Fn.filter((req, resp, chain) -> {
            seen.add("first");
            resp.setHeader("X-First", "1");
            chain.doFilter(req, resp);
        }), "/*");
        c.addFilter("guard", Fn.filter((req, resp, chain) -> {
            seen.add("guard");
            if (req.getHeader("Authorization") == null) {
                resp.sendError(401);
                return;
            }
            chain.doFilter(req, resp);
        }), "/private/*");
        c.addServlet("app", Fn.servlet((req, resp) -> {
            seen.add("servlet");
            resp.getWriter().print("ok");
        }), "/");
        c.start();
        TestResponse open = call(c, TestRequest.get("/public"));
        assertEquals("ok", open.bodyText());
        assertEquals(List.of("first", "servlet"), seen);
        seen.clear();
        TestResponse closed = call(c, TestRequest.get("/private/x"));
        assertEquals(401, closed.status());
        assertEquals("1", closed.headers().first("x-first"));
        assertEquals(List.of("first", "guard"), seen);
    }

    @Test
    void theAfterBurnRequestIsReachableAsAttributes() throws Exception {
        AtomicReference<Object[]> got = new AtomicReference<>();
        ServletContainer c = one((req, resp) -> {
            Request r = AfterBurnRequest.of(req);
            got.set(new Object[] {req.getAttribute(AfterBurnRequest.REQUEST_ID), req.getRequestId(), r.timeRemaining(),
                    req.getAttribute(AfterBurnRequest.DEADLINE), ((BooleanSupplier) req.getAttribute(AfterBurnRequest.CANCELLED)).getAsBoolean()});
        });
        call(c, TestRequest.get("/").requestId("rid-s1").timeout(Duration.ofSeconds(10)));
        Object[] g = got.get();
        assertEquals("rid-s1", g[0]);
        assertEquals("rid-s1", g[1]);
        assertTrue(((Duration) g[2]).compareTo(Duration.ofSeconds(9)) > 0);
        Instant deadline = (Instant) g[3];
        assertTrue(deadline.isAfter(Instant.now().plusSeconds(8)) && deadline.isBefore(Instant.now().plusSeconds(11)), deadline.toString());
        assertEquals(false, g[4]);
    }

    @Test
    void aRequestWithoutDeadlineHasNoDeadlineAttribute() throws Exception {
        AtomicReference<Object> got = new AtomicReference<>("unset");
        call(one((req, resp) -> got.set(req.getAttribute(AfterBurnRequest.DEADLINE))), TestRequest.get("/"));
        assertNull(got.get());
    }

    @Test
    void anExceptionBeforeCommitIs500HandlerErrorWithTheProtocolsBody() throws Exception {
        ServletContainer c = one((req, resp) -> {
            resp.getWriter().print("never sent");
            throw new IllegalStateException("database password is hunter2");
        });
        TestResponse r = call(c, TestRequest.get("/").requestId("rid-x"));
        assertEquals(500, r.status());
        assertEquals("handler_error", r.headers().first("afterburn-error"));
        assertTrue(r.bodyText().startsWith("{\"type\":\"handler_error\""), r.bodyText());
        assertTrue(r.bodyText().contains("\"request_id\":\"rid-x\""));
        assertFalse(r.bodyText().contains("hunter2"));
    }

    @Test
    void anExceptionAfterCommitLeavesTheResponseIncomplete() throws Exception {
        ServletContainer c = one((req, resp) -> {
            resp.getWriter().print("partial");
            resp.flushBuffer();
            throw new IllegalStateException("late");
        });
        TestResponse r = call(c, TestRequest.get("/"));
        assertEquals(200, r.status());
        assertFalse(r.complete(), "PROTOCOL.md §8.3: a half-written body must not look complete");
    }

    @Test
    void anAsyncServletCompletesFromAnotherThread() throws Exception {
        ServletContainer c = one((req, resp) -> {
            AsyncContext ac = req.startAsync();
            List<String> events = Collections.synchronizedList(new ArrayList<>());
            ac.addListener(new AsyncListener() {
                @Override
                public void onComplete(AsyncEvent e) {
                    events.add("complete");
                }

                @Override
                public void onTimeout(AsyncEvent e) {}

                @Override
                public void onError(AsyncEvent e) {}

                @Override
                public void onStartAsync(AsyncEvent e) {}
            });
            Thread lane = Thread.currentThread();
            CompletableFuture.runAsync(() -> {
                try {
                    resp.getWriter().print("from " + (Thread.currentThread() != lane ? "another thread" : "the lane"));
                } catch (Exception e) {
                    throw new RuntimeException(e);
                }
                ac.complete();
            });
        });
        TestResponse r = call(c, TestRequest.get("/"));
        assertEquals(200, r.status());
        assertEquals("from another thread", r.bodyText());
    }

    @Test
    void anAsyncDispatchRunsTheTargetOnTheLaneWithDispatcherTypeAsync() throws Exception {
        ServletContainer c = ServletContainer.create();
        c.addServlet("start", Fn.servlet((req, resp) -> {
            AsyncContext ac = req.startAsync();
            ac.start(() -> ac.dispatch("/render?x=1"));
        }), "/start");
        c.addServlet("render", Fn.servlet((req, resp) -> resp.getWriter().print(req.getDispatcherType() + " " + req.getParameter("x")
                + " " + Thread.currentThread().getName())), "/render");
        c.start();
        TestResponse r = call(c, TestRequest.get("/start"));
        assertEquals("ASYNC 1 " + Thread.currentThread().getName(), r.bodyText(), "the lane's thread renders");
    }

    @Test
    void anAsyncRequestThatTimesOutIs500() throws Exception {
        ServletContainer c = one((req, resp) -> req.startAsync().setTimeout(50));
        TestResponse r = call(c, TestRequest.get("/"));
        assertEquals(500, r.status());
    }

    @Test
    void startAsyncOnAChainThatDoesNotSupportItIsRefused() throws Exception {
        ServletContainer c = ServletContainer.create();
        c.servletContext().addFilter("sync", Fn.filter((req, resp, chain) -> chain.doFilter(req, resp)))
                .addMappingForUrlPatterns(EnumSet.of(DispatcherType.REQUEST), true, "/*");
        c.addServlet("app", Fn.servlet((req, resp) -> {
            try {
                req.startAsync();
            } catch (IllegalStateException e) {
                resp.getWriter().print(e.getMessage());
            }
        }), "/");
        c.start();
        assertTrue(call(c, TestRequest.get("/")).bodyText().contains("does not support async"));
    }

    @Test
    void forwardChangesThePathAndIncludeKeepsIt() throws Exception {
        ServletContainer c = ServletContainer.create();
        c.addServlet("front", Fn.servlet((req, resp) -> {
            if (req.getParameter("include") != null) {
                resp.getWriter().print("[" + req.getServletPath() + "]");
                req.getRequestDispatcher("/part?p=2").include(req, resp);
                resp.getWriter().print("[after]");
            } else {
                req.getRequestDispatcher("/target?y=2").forward(req, resp);
                resp.getWriter().print("dropped after forward");
            }
        }), "/front");
        c.addServlet("target", Fn.servlet((req, resp) -> resp.getWriter().print(req.getDispatcherType() + " " + req.getRequestURI()
                + " " + req.getServletPath() + " " + req.getParameter("y") + " " + req.getParameter("x")
                + " " + req.getAttribute(RequestDispatcher.FORWARD_REQUEST_URI))), "/target");
        c.addServlet("part", Fn.servlet((req, resp) -> {
            resp.setStatus(500); // ignored in an include
            resp.getWriter().print(req.getDispatcherType() + " " + req.getServletPath() + " " + req.getParameter("p")
                    + " " + req.getAttribute(RequestDispatcher.INCLUDE_SERVLET_PATH));
        }), "/part");
        c.start();
        assertEquals("FORWARD /target /target 2 1 /front", call(c, TestRequest.get("/front?x=1")).bodyText());
        TestResponse inc = call(c, TestRequest.get("/front?include=1"));
        assertEquals(200, inc.status());
        assertEquals("[/front]INCLUDE /front 2 /part[after]", inc.bodyText());
    }

    @Test
    void aHeadRequestGetsTheLengthAndNoBody() throws Exception {
        ServletContainer c = one((req, resp) -> {
            if (!req.getMethod().equals("HEAD")) throw new AssertionError(req.getMethod());
            resp.getWriter().print("twelve bytes");
        });
        TestResponse r = call(c, TestRequest.of("HEAD", "/"));
        assertEquals(200, r.status());
        assertEquals("12", r.headers().first("content-length"), r.headers().toString());
        assertEquals(0, r.body().length);
    }

    @Test
    void anHttpServletAnswersHeadFromDoGet() throws Exception {
        ServletContainer c = ServletContainer.of(new HttpServlet() {
            private static final long serialVersionUID = 1L;

            @Override
            protected void doGet(jakarta.servlet.http.HttpServletRequest req, jakarta.servlet.http.HttpServletResponse resp)
                    throws java.io.IOException {
                resp.getWriter().print("body of get");
            }
        });
        assertEquals("11", call(c, TestRequest.of("HEAD", "/")).headers().first("content-length"));
        assertEquals(405, call(c, TestRequest.post("/")).status());
    }

    @Test
    void trailersSetByTheServletFollowTheBody() throws Exception {
        ServletContainer c = one((req, resp) -> {
            resp.setTrailerFields(() -> Map.of("X-Sum", "9"));
            resp.getWriter().print("body");
        });
        TestResponse r = call(c, TestRequest.get("/"));
        assertEquals("9", r.trailers().first("x-sum"));
        assertEquals("body", r.bodyText());
    }

    @Test
    void listenersAndLoadOnStartupRunAtStartAndTheirFailureFailsTheStart() throws Exception {
        List<String> seen = new ArrayList<>();
        ServletContainer c = ServletContainer.create();
        c.servletContext().addListener(new ServletContextListener() {
            @Override
            public void contextInitialized(ServletContextEvent sce) {
                seen.add("context");
            }
        });
        c.addServlet("eager", new HttpServlet() {
            private static final long serialVersionUID = 1L;

            @Override
            public void init() {
                seen.add("init " + getInitParameter("k"));
            }
        }, "/x").setLoadOnStartup(1);
        c.servletContext().getServletRegistration("eager").setInitParameter("k", "v");
        c.start();
        assertEquals(List.of("context", "init v"), seen);
        assertThrows(IllegalStateException.class, () -> c.servletContext().addServlet("late", new HttpServlet() {
            private static final long serialVersionUID = 1L;
        }), "registration closes at start");

        ServletContainer bad = ServletContainer.create();
        bad.addServlet("broken", new HttpServlet() {
            private static final long serialVersionUID = 1L;

            @Override
            public void init() throws ServletException {
                throw new ServletException("no database");
            }
        }, "/").setLoadOnStartup(0);
        ServletException e = assertThrows(ServletException.class, bad::start);
        assertEquals("no database", e.getMessage());
    }

    @Test
    void servingBeforeStartIsRefused() {
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> ServletContainer.create().handler());
        assertEquals("afterburn-servlet: start() the container before serving it", e.getMessage());
    }

    @Test
    void anUpgradeIsRefusedWithTheReason() throws Exception {
        AtomicReference<String> msg = new AtomicReference<>();
        call(one((req, resp) -> {
            try {
                req.upgrade(jakarta.servlet.http.HttpUpgradeHandler.class);
            } catch (ServletException e) {
                msg.set(e.getMessage());
            }
        }), TestRequest.get("/"));
        assertNotNull(msg.get());
        assertTrue(msg.get().contains("cannot cross the watchdog"), msg.get());
    }

    private static final String FORM = "--XyZ\r\n"
            + "Content-Disposition: form-data; name=\"title\"\r\n\r\n"
            + "Grüße\r\n"
            + "--XyZ\r\n"
            + "Content-Disposition: form-data; name=\"upload\"; filename=\"a.txt\"\r\n"
            + "Content-Type: text/plain\r\n\r\n"
            + "line one\r\nline two\r\n"
            + "--XyZ--\r\n";

    private static ServletContainer uploads(jakarta.servlet.MultipartConfigElement config) throws ServletException {
        ServletContainer c = ServletContainer.create();
        var r = c.addServlet("upload", Fn.servlet((req, resp) -> {
            req.setCharacterEncoding("UTF-8");
            StringBuilder sb = new StringBuilder("title=" + req.getParameter("title") + " upload=" + req.getParameter("upload"));
            for (jakarta.servlet.http.Part p : req.getParts()) {
                sb.append(" | ").append(p.getName()).append(' ').append(p.getSubmittedFileName()).append(' ')
                        .append(p.getContentType()).append(' ').append(p.getSize()).append(' ')
                        .append(new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).replace("\r\n", "/"));
            }
            resp.setCharacterEncoding("UTF-8");
            resp.getWriter().print(sb);
        }), "/");
        if (config != null) r.setMultipartConfig(config);
        c.start();
        return c;
    }

    @Test
    void aMultipartFormGivesPartsAndItsTextFieldsAreParameters() throws Exception {
        TestResponse r = call(uploads(new jakarta.servlet.MultipartConfigElement("")),
                TestRequest.post("/").header("Content-Type", "multipart/form-data; boundary=XyZ").body(FORM.getBytes(StandardCharsets.UTF_8)));
        assertEquals(200, r.status(), r.bodyText());
        assertEquals("title=Grüße upload=null | title null null 7 Grüße | upload a.txt text/plain 18 line one/line two", r.bodyText());
    }

    @Test
    void multipartLimitsAndMalformedBodiesAreRefused() throws Exception {
        TestRequest form = TestRequest.post("/").header("Content-Type", "multipart/form-data; boundary=XyZ").body(FORM.getBytes(StandardCharsets.UTF_8));
        assertEquals(500, call(uploads(null), form).status(), "§3.2: no multipart config, no parts");
        assertEquals(500, call(uploads(new jakarta.servlet.MultipartConfigElement("", 10, -1, 0)), form).status(), "a part over maxFileSize");
        assertEquals(500, call(uploads(new jakarta.servlet.MultipartConfigElement("", -1, 50, 0)), form).status(), "a body over maxRequestSize");
        TestRequest cut = TestRequest.post("/").header("Content-Type", "multipart/form-data; boundary=XyZ")
                .body("--XyZ\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\nno end".getBytes(StandardCharsets.UTF_8));
        assertEquals(500, call(uploads(new jakarta.servlet.MultipartConfigElement("")), cut).status());
        Multipart.BodyPart p = (Multipart.BodyPart) Multipart.parse(new java.io.ByteArrayInputStream(FORM.getBytes(StandardCharsets.UTF_8)),
                "multipart/form-data; boundary=\"XyZ\"", new jakarta.servlet.MultipartConfigElement(""), StandardCharsets.UTF_8).get(1);
        assertEquals("a.txt", p.getSubmittedFileName());
        ServletException e = assertThrows(ServletException.class, () -> Multipart.parse(new java.io.ByteArrayInputStream(new byte[0]),
                "multipart/form-data; boundary=XyZ", new jakarta.servlet.MultipartConfigElement(""), StandardCharsets.UTF_8));
        assertEquals("afterburn-servlet: malformed multipart body: no boundary line", e.getMessage());
    }

    @Test
    void localesComeFromAcceptLanguageByQuality() throws Exception {
        ServletContainer c = one((req, resp) -> resp.getWriter().print(Collections.list(req.getLocales())));
        assertEquals("[de_CH, fr, en]", call(c, TestRequest.get("/").header("Accept-Language", "fr;q=0.9, de-CH, en;q=0.5, *;q=0.1")).bodyText());
    }
}
