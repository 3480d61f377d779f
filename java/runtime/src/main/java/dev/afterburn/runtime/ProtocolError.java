package dev.afterburn.runtime;

/**
 * A request the library cannot parse (PROTOCOL.md §4.3, §8.8), or a failed handshake (§3.4).
 * It carries the status and type of §8.2 for the error response and a detail with the
 * offending value for the library's own log; the detail never goes on the wire (§8.1).
 */
final class ProtocolError extends Exception {
    private static final long serialVersionUID = 1L;

    // The error types of PROTOCOL.md §8.2 that a library raises. The list is closed.
    static final String BAD_REQUEST = "bad_request";
    static final String HEADERS_TOO_LARGE = "headers_too_large";
    static final String BODY_TOO_LARGE = "body_too_large";
    static final String NOT_IMPLEMENTED = "not_implemented";
    static final String HANDLER_ERROR = "handler_error";
    static final String VERSION_MISMATCH = "version_mismatch";

    final int status;
    final String type;

    private ProtocolError(int status, String type, String detail) {
        super(detail, null, false, false); // no stack: these are answers, not bugs
        this.status = status;
        this.type = type;
    }

    /** PROTOCOL.md §8.2 and the conformance README: a §4.3 rule that names no status is 400. */
    static ProtocolError badRequest(String detail) {
        return new ProtocolError(400, BAD_REQUEST, detail);
    }

    /** §4.3 rule 11. */
    static ProtocolError headersTooLarge(int limit) {
        return new ProtocolError(431, HEADERS_TOO_LARGE, "the request head is longer than " + limit + " bytes");
    }

    /** §4.3 rule 12. */
    static ProtocolError bodyTooLarge(long limit) {
        return new ProtocolError(413, BODY_TOO_LARGE, "the request body is longer than " + limit + " bytes");
    }

    /** §4.3 rule 8. */
    static ProtocolError notImplemented(String transferEncoding) {
        return new ProtocolError(501, NOT_IMPLEMENTED, "Transfer-Encoding " + Ascii.quote(transferEncoding));
    }

    /** §3.4. */
    static ProtocolError versionMismatch(String offered) {
        return new ProtocolError(400, VERSION_MISMATCH,
                "the watchdog offers AfterBurn-Handshake " + Ascii.quote(offered) + "; this library speaks "
                        + Worker.PROTOCOL_VERSION);
    }

    /** §9.4: EOF inside a request is a framing error. */
    static ProtocolError truncated(String where) {
        return badRequest("end of the request pipe inside " + where);
    }

    String detail() {
        return getMessage();
    }
}
