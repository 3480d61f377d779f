package com.openfaas.function;

import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestBody;
import org.springframework.web.bind.annotation.RequestHeader;
import org.springframework.web.bind.annotation.RequestParam;
import org.springframework.web.bind.annotation.RestController;

/** Replace with your controllers. GET / greets, POST / echoes the body with its content type. */
@RestController
public class HelloController {
    @GetMapping("/")
    public void hello(@RequestParam(name = "name", defaultValue = "world") String name, HttpServletRequest request,
                      HttpServletResponse response) throws IOException {
        // Under the watchdog getRequestId() is its request id (X-Request-Id when the client sent one).
        System.out.println("GET / (request " + request.getRequestId() + ")");
        response.setContentType("text/plain; charset=utf-8");
        response.getOutputStream().write(("Hello, " + name + "!\n").getBytes(StandardCharsets.UTF_8));
    }

    @PostMapping("/")
    public ResponseEntity<byte[]> echo(@RequestBody(required = false) byte[] body,
                                       @RequestHeader(name = "Content-Type", defaultValue = "application/octet-stream") String type) {
        return ResponseEntity.ok().header("Content-Type", type).body(body == null ? new byte[0] : body);
    }
}
