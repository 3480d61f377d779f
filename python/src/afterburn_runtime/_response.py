"""Responses: the public Response object and its framing into bytes (PROTOCOL.md §4.4)."""

from __future__ import annotations

from ._parser import is_token

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import AsyncIterable, Callable, Iterable
    from typing import Any, Union

    Body = Union[bytes, bytearray, memoryview, str, Iterable[Union[bytes, str]], AsyncIterable[Union[bytes, str]]]
    FieldsLike = Union[dict[str, str], Iterable[tuple[str, str]], None]


class Response:
    """What a handler returns.

    ``body`` is ``bytes`` or ``str`` (sent with ``Content-Length``), or an iterable or async
    iterable of ``bytes``/``str`` pieces, streamed as produced: each piece is written to the
    watchdog at once as one chunk of a chunked body (PROTOCOL.md §6.1), or, when the headers
    carry a ``Content-Length``, as raw bytes under that length. ``headers`` is a dict or a
    list of ``(name, value)`` pairs; a list may repeat a name (two ``Set-Cookie`` lines).
    ``trailers`` are sent after a streamed body: a list of pairs, or a function called when
    the body has ended that returns them (for a checksum of what was streamed).

    A ``str`` body is UTF-8 and gets ``Content-Type: text/plain; charset=utf-8`` unless the
    headers say otherwise; ``Response.json(obj)`` makes a JSON response.
    """

    __slots__ = ("status", "headers", "body", "trailers")

    def __init__(
        self,
        body: Body = b"",
        status: int = 200,
        headers: FieldsLike = None,
        *,
        content_type: str | None = None,
        trailers: list[tuple[str, str]] | Callable[[], list[tuple[str, str]]] | None = None,
    ) -> None:
        if headers is None:
            fields = []
        elif isinstance(headers, dict):
            fields = list(headers.items())
        else:
            fields = list(headers)
        if type(body) is bytes:
            pass  # the common case, kept as is without the checks below
        elif isinstance(body, str):
            body = body.encode()
            if content_type is None and not _has_field(fields, "content-type"):
                content_type = "text/plain; charset=utf-8"
        elif isinstance(body, (bytearray, memoryview)):
            body = bytes(body)
        if content_type is not None:
            fields.append(("Content-Type", content_type))
        self.status = status
        self.headers: list[tuple[str, str]] = fields
        self.body = body
        self.trailers = trailers

    @classmethod
    def json(cls, data: Any, status: int = 200, headers: FieldsLike = None, *,
             dumps: Callable[[Any], str | bytes] | None = None) -> Response:
        """A response whose body is ``data`` as JSON, with ``Content-Type: application/json``.

        ``dumps`` encodes it (``str`` or ``bytes``, e.g. ``orjson.dumps``, or
        ``functools.partial(json.dumps, default=str)``); without it, the application's
        default (``serve(..., json_dumps=...)``), else ``json.dumps``. Dataclasses and
        pydantic models are turned into plain data first (see ``to_jsonable``)."""
        encode = dumps or json_dumps[0] or _std_dumps()
        body = encode(to_jsonable(data))
        if isinstance(body, str):
            body = body.encode()
        return cls(body, status, headers, content_type="application/json")

    def __repr__(self) -> str:
        kind = "bytes" if isinstance(self.body, bytes) else "stream"
        return f"<Response {self.status} {kind}>"


# The application's JSON encoder (serve(..., json_dumps=...)), None for json.dumps: every
# JSON body the library encodes for a handler goes through it.
json_dumps: list[Callable[[Any], str | bytes] | None] = [None]


def _std_dumps() -> Callable[[Any], str]:
    import json

    return json.dumps


def to_jsonable(data: Any) -> Any:
    """``data`` with a dataclass instance or pydantic model (at the top) turned into the
    plain data it holds, for the JSON encoder; anything else as it is. Nested ones are
    turned too (``dataclasses.asdict`` recurses; a model's ``model_dump`` does)."""
    if type(data) in (dict, list, str, int, float, bool) or data is None:
        return data  # the common case, without the probes below
    if hasattr(type(data), "__dataclass_fields__"):
        import dataclasses

        return dataclasses.asdict(data)
    dump = getattr(data, "model_dump", None)
    if dump is not None and hasattr(type(data), "model_fields"):  # pydantic 2
        return dump(mode="json")
    return data


def to_response(result: Any) -> Response:
    """The handler's return value as a Response: a Response as is, ``str``/``bytes`` as a
    body, a ``dict``/``list``, a dataclass instance or a pydantic model as JSON, ``None``
    as an empty 200."""
    if isinstance(result, Response):
        return result
    if isinstance(result, (bytes, str, bytearray, memoryview)):
        return Response(result)
    if isinstance(result, (dict, list)):
        return Response.json(result)
    if result is None:
        return Response()
    jsonable = to_jsonable(result)
    if jsonable is not result:
        return Response.json(jsonable)
    raise TypeError(f"a handler returned {type(result).__name__}; want a Response, str, bytes, dict, list, "
                    "a dataclass, a pydantic model or None")


def _has_field(fields: list[tuple[str, str]], lname: str) -> bool:
    for name, _ in fields:
        if name.lower() == lname:
            return True
    return False


# -- framing --------------------------------------------------------------------------------

_REASONS = {
    200: "OK", 201: "Created", 202: "Accepted", 203: "Non-Authoritative Information",
    204: "No Content", 205: "Reset Content", 206: "Partial Content", 207: "Multi-Status",
    208: "Already Reported", 226: "IM Used", 300: "Multiple Choices", 301: "Moved Permanently",
    302: "Found", 303: "See Other", 304: "Not Modified", 305: "Use Proxy",
    307: "Temporary Redirect", 308: "Permanent Redirect", 400: "Bad Request",
    401: "Unauthorized", 402: "Payment Required", 403: "Forbidden", 404: "Not Found",
    405: "Method Not Allowed", 406: "Not Acceptable", 407: "Proxy Authentication Required",
    408: "Request Timeout", 409: "Conflict", 410: "Gone", 411: "Length Required",
    412: "Precondition Failed", 413: "Content Too Large", 414: "URI Too Long",
    415: "Unsupported Media Type", 416: "Range Not Satisfiable", 417: "Expectation Failed",
    418: "I'm a teapot", 421: "Misdirected Request", 422: "Unprocessable Content",
    423: "Locked", 424: "Failed Dependency", 425: "Too Early", 426: "Upgrade Required",
    428: "Precondition Required", 429: "Too Many Requests",
    431: "Request Header Fields Too Large", 451: "Unavailable For Legal Reasons",
    500: "Internal Server Error", 501: "Not Implemented", 502: "Bad Gateway",
    503: "Service Unavailable", 504: "Gateway Timeout", 505: "HTTP Version Not Supported",
    506: "Variant Also Negotiates", 507: "Insufficient Storage", 508: "Loop Detected",
    510: "Not Extended", 511: "Network Authentication Required",
}
_STATUS_LINES = {code: f"HTTP/1.1 {code} {reason}\r\n" for code, reason in _REASONS.items()}


def status_line(status: int) -> str:
    """``HTTP/1.1 NNN Reason``; PROTOCOL.md §4.4: the reason phrase may be empty."""
    line = _STATUS_LINES.get(status)
    if line is not None:
        return line
    if type(status) is not int or not 200 <= status <= 999:
        # §4.4: a library MUST NOT send 1xx responses; 100 Continue is the watchdog's job.
        raise ValueError(f"response status {status!r} is not an integer from 200 to 999")
    return f"HTTP/1.1 {status} \r\n"


# Response field names already checked, as the handler spells them -> lower-case, so that
# steady traffic checks each name once. Bounded.
_NAMES: dict[str, str] = {}
_NAMES_MAX = 512


def field_lines(fields: Iterable[tuple[str, str]]) -> tuple[list[str], int | None]:
    """``Name: value`` lines for fields, and the Content-Length the handler declared, if
    any. Names must be tokens and values must not hold CR, LF or NUL, so a handler cannot
    split the response; ``Content-Length`` and ``Transfer-Encoding`` are left out: framing
    is the library's to write. So is ``AfterBurn-Exchange`` (PROTOCOL.md §4.6): the
    library writes the request's token itself, and a handler's own field, which could
    only break the exchange or claim another one, is dropped."""
    out = []
    declared = None
    for name, value in fields:
        lname = _NAMES.get(name)
        if lname is None:
            if not is_token(name):
                raise ValueError(f"response field name {name!r} is not a token")
            lname = name.lower()
            if len(_NAMES) < _NAMES_MAX:
                _NAMES[name] = lname
        if "\r" in value or "\n" in value or "\x00" in value:
            raise ValueError(f"the value of response field {name!r} holds CR, LF or NUL")
        if lname == "content-length":
            v = value.strip()
            if not (v.isdigit() and v.isascii()):
                raise ValueError(f"response Content-Length {value!r} is not a number")
            declared = int(v)
        elif lname != "transfer-encoding" and lname != "afterburn-exchange":
            out.append(f"{name}: {value}\r\n")
    return out, declared
