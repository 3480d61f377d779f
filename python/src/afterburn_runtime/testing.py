"""Call a handler, a WSGI app or an ASGI app in-process, without a watchdog::

    from afterburn_runtime.testing import call

    def test_hello():
        resp = call(handle, "POST", "/hello?x=1", body=b'{"name": "Ada"}')
        assert resp.status == 200
        assert resp.json() == {"hello": "Ada"}

The request goes through the same parser, exchange and response framing as under a
watchdog: the bytes of an HTTP/1.1 request in, the bytes of the response out, parsed back
into a :class:`TestResponse`. A handler that raises gives the 500 ``handler_error``
response a client would get (the traceback goes to stderr).
"""

from __future__ import annotations

from . import _response
from ._exchange import exchange_in_memory
from ._handler import looks_typed, plain_responder
from ._headers import Headers

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable
    from typing import Any

__all__ = ["TestResponse", "call", "call_asgi", "call_wsgi", "parse_response"]


class TestResponse:
    """A response as the watchdog read it.

    ``headers`` and ``trailers`` are :class:`Headers` (lower-case names, repeated fields in
    order); ``chunked`` tells the framing; ``complete`` is False when the body ended early
    (a response that failed after it started, PROTOCOL.md §8.3); ``worker_exit`` is the
    status the worker would exit with after this exchange, 0 when it keeps serving.
    """

    __test__ = False  # not a pytest test class

    def __init__(self, status: int, reason: str, headers: Headers, body: bytes, trailers: Headers,
                 chunked: bool, complete: bool) -> None:
        self.status = status
        self.reason = reason
        self.headers = headers
        self.body = body
        self.trailers = trailers
        self.chunked = chunked
        self.complete = complete
        self.worker_exit = 0

    @property
    def text(self) -> str:
        return self.body.decode()

    def json(self) -> Any:
        import json

        return json.loads(self.body)

    def __repr__(self) -> str:
        return f"<TestResponse {self.status} {len(self.body)} bytes>"


def call(handler: Callable[..., Any], method: str = "GET", target: str = "/", body: bytes | str = b"",
         headers: Iterable[tuple[str, str]] | dict[str, str] = (), *, request_id: str | None = None,
         timeout_ms: int | None = None, json_dumps: Callable[[Any], str | bytes] | None = None,
         shape: str | None = None) -> TestResponse:
    """Calls a plain handler (``def`` or ``async def``, typed or not) with one request;
    ``json_dumps`` and ``shape`` (a handler written for OpenFaaS, Lambda or CloudEvents) as
    for ``serve``."""
    if shape is not None:
        # Lazy: handler shapes only; their adapters import json, base64 and urllib.parse.
        from ._shapes import adapt

        handler = adapt(shape, handler)
    elif looks_typed(handler):
        # Lazy: typed handlers only; _typed imports typing, inspect, dataclasses and json.
        from ._typed import typed_handler

        handler = typed_handler(handler)

    runners: list[Any] = []

    def runner() -> Any:
        if not runners:
            # Lazy: asyncio (tens of ms), for async handlers and bodies only.
            from ._aio import Runner

            runners.append(Runner())
        return runners[0]

    default_dumps = _response.json_dumps
    saved = default_dumps[0]
    if json_dumps is not None:
        default_dumps[0] = json_dumps
    try:
        return _call(plain_responder(handler, runner), method, target, body, headers, request_id, timeout_ms)
    finally:
        default_dumps[0] = saved
        if runners:
            runners[0].close()


def call_wsgi(app: Callable[..., Any], method: str = "GET", target: str = "/", body: bytes | str = b"",
              headers: Iterable[tuple[str, str]] | dict[str, str] = (), *, request_id: str | None = None,
              timeout_ms: int | None = None, keep_underscore_headers: bool = False) -> TestResponse:
    """Calls a WSGI app with one request; ``keep_underscore_headers`` as for ``serve_wsgi``."""
    # Lazy: WSGI apps only; _wsgi imports urllib.parse.
    from ._wsgi import wsgi_responder

    return _call(wsgi_responder(app, keep_underscore_headers), method, target, body, headers, request_id,
                 timeout_ms)


def call_asgi(app: Callable[..., Any], method: str = "GET", target: str = "/", body: bytes | str = b"",
              headers: Iterable[tuple[str, str]] | dict[str, str] = (), *, request_id: str | None = None,
              timeout_ms: int | None = None) -> TestResponse:
    """Calls an ASGI app with one HTTP request (no lifespan events)."""
    # Lazy: ASGI apps only; both import asyncio (tens of ms of start-up).
    from ._aio import Runner
    from ._asgi import AsgiAdapter

    adapter = AsgiAdapter(app)
    adapter.runner = Runner()
    try:
        return _call(adapter.respond, method, target, body, headers, request_id, timeout_ms)
    finally:
        adapter.runner.close()


def _call(respond: Any, method: str, target: str, body: bytes | str, headers: Any,
          request_id: str | None, timeout_ms: int | None) -> TestResponse:
    if isinstance(body, str):
        body = body.encode()
    pairs = list(headers.items()) if isinstance(headers, dict) else list(headers)
    lines = [f"{method} {target} HTTP/1.1"]
    if not any(n.lower() == "host" for n, _ in pairs):
        lines.append("Host: afterburn.test")
    lines += [f"{n}: {v}" for n, v in pairs]
    if request_id is not None:
        lines.append(f"AfterBurn-Request-Id: {request_id}")
    if timeout_ms is not None:
        lines.append(f"AfterBurn-Timeout-Ms: {timeout_ms}")
    if not any(n.lower() in ("content-length", "transfer-encoding") for n, _ in pairs):
        lines.append(f"Content-Length: {len(body)}")
    raw = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body
    out, status = exchange_in_memory(raw, respond)
    resp = parse_response(out, method == "HEAD")[0]
    resp.worker_exit = status
    return resp


def parse_response(data: bytes, is_head: bool = False) -> tuple[TestResponse, bytes]:
    """Parses one HTTP/1.1 response from data; returns it and the bytes after it."""
    end = data.find(b"\r\n\r\n")
    if end < 0:
        raise ValueError(f"no complete response head in {data[:200]!r}")
    lines = data[:end].decode("latin-1").split("\r\n")
    version, status, reason = (lines[0].split(" ", 2) + [""])[:3]
    if version != "HTTP/1.1":
        raise ValueError(f"bad status line {lines[0]!r}")
    fields = []
    for line in lines[1:]:
        name, _, value = line.partition(":")
        fields.append((name.lower(), value.strip(" \t")))
    headers = Headers(fields)
    rest = data[end + 4 :]
    code = int(status)
    chunked = (headers.get("transfer-encoding") or "").lower() == "chunked"
    trailers: list[tuple[str, str]] = []
    complete = True
    if is_head or code in (204, 304):
        body = b""
    elif chunked:
        parts = []
        while True:
            eol = rest.find(b"\r\n")
            if eol < 0:
                complete = False
                break
            size = int(rest[:eol].split(b";")[0], 16)
            if size == 0:
                rest = rest[eol + 2 :]
                while True:
                    eol = rest.find(b"\r\n")
                    if eol < 0:
                        complete = False
                        break
                    line = rest[:eol].decode("latin-1")
                    rest = rest[eol + 2 :]
                    if not line:
                        break
                    name, _, value = line.partition(":")
                    trailers.append((name.lower(), value.strip(" \t")))
                break
            if len(rest) < eol + 2 + size + 2:
                parts.append(rest[eol + 2 : eol + 2 + size])
                rest = b""
                complete = False
                break
            parts.append(rest[eol + 2 : eol + 2 + size])
            rest = rest[eol + 2 + size + 2 :]
        body = b"".join(parts)
    else:
        length = int(headers.get("content-length") or "0")
        body, rest = rest[:length], rest[length:]
        complete = len(body) == length
    return TestResponse(code, reason, headers, body, Headers(trailers), chunked, complete), rest
