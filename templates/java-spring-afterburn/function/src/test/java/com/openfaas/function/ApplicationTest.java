package com.openfaas.function;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.client.TestRestTemplate;
import org.springframework.http.HttpEntity;
import org.springframework.http.HttpHeaders;
import org.springframework.http.MediaType;
import org.springframework.http.ResponseEntity;

/**
 * The application's tests, over HTTP on a random port (Tomcat: the tests run without the
 * watchdog, and the starter stands aside). The same application serves the watchdog's pipes in
 * the image.
 */
@SpringBootTest(webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT)
class ApplicationTest {
    @Autowired
    TestRestTemplate http;

    @Test
    void greets() {
        ResponseEntity<String> r = http.getForEntity("/?name=Ada", String.class);
        assertEquals(200, r.getStatusCode().value());
        assertEquals("Hello, Ada!\n", r.getBody());
        assertEquals("text/plain;charset=utf-8", r.getHeaders().getFirst("Content-Type").replace(" ", ""));
    }

    @Test
    void echoesJson() {
        HttpHeaders h = new HttpHeaders();
        h.setContentType(MediaType.APPLICATION_JSON);
        ResponseEntity<byte[]> r = http.postForEntity("/", new HttpEntity<>("{\"n\":1}".getBytes(), h), byte[].class);
        assertEquals(200, r.getStatusCode().value());
        assertArrayEquals("{\"n\":1}".getBytes(), r.getBody());
        assertEquals("application/json", r.getHeaders().getFirst("Content-Type"));
    }
}
