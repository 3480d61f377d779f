"""The protocol's errors: the closed list of types (PROTOCOL.md §8.2) and the §8.1 body."""

from __future__ import annotations

# PROTOCOL.md §8.2: the types a library raises, with their status. The list is closed.
BAD_REQUEST = "bad_request"
HEADERS_TOO_LARGE = "headers_too_large"
BODY_TOO_LARGE = "body_too_large"
NOT_IMPLEMENTED = "not_implemented"
HANDLER_ERROR = "handler_error"
VERSION_MISMATCH = "version_mismatch"

STATUS = {
    BAD_REQUEST: 400,
    HEADERS_TOO_LARGE: 431,
    BODY_TOO_LARGE: 413,
    NOT_IMPLEMENTED: 501,
    HANDLER_ERROR: 500,
    VERSION_MISMATCH: 400,
}

# PROTOCOL.md §8.1: one human-readable sentence per type. It never carries an exception's
# message or request bytes, which may hold secrets; details go to stderr only.
MESSAGES = {
    BAD_REQUEST: "the request is malformed",
    HEADERS_TOO_LARGE: "the request head is larger than the limit",
    BODY_TOO_LARGE: "the request body is larger than the limit",
    NOT_IMPLEMENTED: "the request uses a transfer coding other than chunked",
    HANDLER_ERROR: "the function failed while handling the request",
    VERSION_MISMATCH: "the library speaks none of the offered protocol versions",
}

_REASONS = {400: "Bad Request", 413: "Payload Too Large", 431: "Request Header Fields Too Large",
            500: "Internal Server Error", 501: "Not Implemented"}


class ProtocolError(Exception):
    """A request the library cannot parse (PROTOCOL.md §4.3, §8.8) or a failed handshake (§3.4).

    ``status`` and ``type`` are those of §8.2; the message (``str(err)``) names what was
    wrong for the logs and is never sent to the watchdog. After a ProtocolError the
    request stream cannot be trusted: the worker answers it and exits non-zero.
    """

    def __init__(self, type: str, detail: str) -> None:
        super().__init__(detail)
        self.type = type
        self.status = STATUS[type]
        self.request_id: str | None = None
        # The exchange token of the request it answers, when the head was read (§4.6).
        self.exchange: str | None = None


def exchange_line(exchange: str | None) -> str:
    """PROTOCOL.md §4.6: the field that binds a response to its exchange, "" for a request
    that carried no token. Every response head the library writes goes through this."""
    return "" if exchange is None else f"AfterBurn-Exchange: {exchange}\r\n"


def bad_request(detail: str) -> ProtocolError:
    # conformance/README.md: a rule of §4.3 that names no status is answered 400.
    return ProtocolError(BAD_REQUEST, detail)


def error_body(type: str, request_id: str | None = None, message: str | None = None) -> bytes:
    """The §8.1 JSON body; ``message`` replaces the type's sentence where §8.1 asks for more
    (a typed handler's bad_request names the field), and never holds an exception's text."""
    import json  # lazily: only error paths need it, and the import costs start-up time

    body = {"type": type, "message": message or MESSAGES[type]}
    if request_id:
        body["request_id"] = request_id
    return json.dumps(body).encode()


def error_response(type: str, request_id: str | None = None, extra: str = "",
                   exchange: str | None = None) -> bytes:
    """A complete §8.1 error response: the §8.2 status, a JSON body with Content-Length,
    and ``AfterBurn-Error`` naming the type. ``extra`` holds more CRLF-ended field lines;
    ``exchange`` is the token of the request it answers (§4.6)."""
    data = error_body(type, request_id)
    status = STATUS[type]
    head = (
        f"HTTP/1.1 {status} {_REASONS[status]}\r\n"
        "Content-Type: application/json\r\n"
        f"AfterBurn-Error: {type}\r\n"
        f"{extra}{exchange_line(exchange)}Content-Length: {len(data)}\r\n\r\n"
    )
    return head.encode("latin-1") + data


class Cancelled(BaseException):
    """Raised in a synchronous handler on the main thread when its request is cancelled:
    50 ms after its deadline (PROTOCOL.md §5.2, §2.5), when the watchdog has already answered
    the client ``504``. Catch it to clean up and return a response (which the watchdog
    discards), or let it propagate: the library then answers ``500 handler_error`` (§8.3).

    A ``BaseException``, as ``asyncio.CancelledError``, ``KeyboardInterrupt`` and
    ``SystemExit`` are: a cancellation is not an error of the handler's, and the common
    ``except Exception:`` of a retry loop or a framework's error page must not swallow it
    and carry on past the deadline. ``finally`` blocks and ``with`` statements run as for
    any exception.
    """

    def __init__(self, message: str = "the request's deadline passed") -> None:
        super().__init__(message)
