package dev.afterburn.runtime;

import java.nio.charset.StandardCharsets;

/**
 * The JSON error body of PROTOCOL.md §8.1 and the error responses that carry it. Written by
 * hand, so that answering an error never loads a JSON library.
 */
final class ErrorBody {
    private ErrorBody() {}

    /**
     * The human-readable sentence for each type. §8.1: it never carries a handler
     * exception's message or request bytes, which may hold secrets.
     */
    static String message(String type) {
        switch (type) {
            case ProtocolError.BAD_REQUEST: return "the request is malformed";
            case ProtocolError.HEADERS_TOO_LARGE: return "the request head is larger than the limit";
            case ProtocolError.BODY_TOO_LARGE: return "the request body is larger than the limit";
            case ProtocolError.NOT_IMPLEMENTED: return "the request uses a transfer coding other than chunked";
            case ProtocolError.HANDLER_ERROR: return "the function failed while handling the request";
            case ProtocolError.VERSION_MISMATCH: return "the library speaks none of the offered protocol versions";
            default: throw new IllegalArgumentException("not a library error type: " + type);
        }
    }

    /** {@code {"type": …, "message": …, "request_id": …}}; the id is left out when null. */
    static byte[] json(String type, String message, String requestId) {
        StringBuilder sb = new StringBuilder(128);
        sb.append("{\"type\":");
        string(sb, type);
        sb.append(",\"message\":");
        string(sb, message);
        if (requestId != null) {
            sb.append(",\"request_id\":");
            string(sb, requestId);
        }
        sb.append('}');
        return sb.toString().getBytes(StandardCharsets.UTF_8);
    }

    /**
     * A complete error response: the status of §8.2, {@code Content-Type: application/json},
     * {@code AfterBurn-Error} naming the type, any extra CRLF-terminated field lines, and the
     * body with {@code Content-Length}.
     */
    static byte[] response(int status, String type, String requestId, String extraFields) {
        byte[] body = json(type, message(type), requestId);
        String head = "HTTP/1.1 " + status + " " + reason(status) + "\r\n"
                + "Content-Type: application/json\r\n"
                + "AfterBurn-Error: " + type + "\r\n"
                + extraFields
                + "Content-Length: " + body.length + "\r\n\r\n";
        byte[] h = head.getBytes(StandardCharsets.ISO_8859_1);
        byte[] all = new byte[h.length + body.length];
        System.arraycopy(h, 0, all, 0, h.length);
        System.arraycopy(body, 0, all, h.length, body.length);
        return all;
    }

    private static String reason(int status) {
        switch (status) {
            case 400: return "Bad Request";
            case 413: return "Content Too Large";
            case 431: return "Request Header Fields Too Large";
            case 500: return "Internal Server Error";
            case 501: return "Not Implemented";
            default: return "";
        }
    }

    /** A JSON string, escaped as the JSON log lines are (LogFormat.quote). */
    static void string(StringBuilder sb, String s) {
        LogFormat.quote(sb, s);
    }
}
