"""serve_wsgi: a WSGI application (PEP 3333) as the handler.

PROTOCOL.md §5.5: the environ names a field as CGI does, ``X-Forwarded-For`` as
``HTTP_X_FORWARDED_FOR``, and ``X_Forwarded_For`` would land on the same key: a client
could shadow or join a field that a proxy in front of the watchdog set. So by default every
request field whose name holds ``_`` is dropped before the environ is built, as gunicorn
and nginx do; ``keep_underscore_headers=True`` keeps them.
"""

from __future__ import annotations

import sys
from urllib.parse import unquote_to_bytes

from . import _state
from ._handler import PRE_DRAIN
from ._headers import Headers

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from ._request import Request
    from ._writer import ResponseWriter


class _Input:
    """``wsgi.input``: the request body as a stream (PROTOCOL.md §6.1)."""

    __slots__ = ("_req",)

    def __init__(self, req: Request) -> None:
        self._req = req

    def read(self, size: int | None = -1) -> bytes:
        return self._req.read(-1 if size is None else size)

    def readline(self, size: int | None = -1) -> bytes:
        return self._req.readline(-1 if size is None else size)

    def readlines(self, hint: int = -1) -> list[bytes]:
        return list(self._req)

    def __iter__(self):
        return iter(self._req)


# Field names (lower-case) -> their environ keys, so that steady traffic converts each name
# once. Bounded: a client cannot grow it without end.
_ENV_KEYS: dict[str, str] = {"content-type": "CONTENT_TYPE", "content-length": "CONTENT_LENGTH"}
_ENV_KEYS_MAX = 512


def environ_for(req: Request) -> dict[str, Any]:
    """The WSGI environ of a request. Header values are the latin-1 strings PEP 3333 asks
    for; repeated fields are joined with ", " (``Cookie`` with "; ")."""
    host = req.headers.get("host") or ""
    if host.startswith("["):  # an IPv6 literal
        end = host.find("]") + 1
        name, port = host[:end], host[end + 1 :]
    else:
        name, _, port = host.partition(":")
    port = port or "80"
    path = req.path
    env: dict[str, Any] = {
        "REQUEST_METHOD": req.method,
        "SCRIPT_NAME": "",
        "PATH_INFO": path if "%" not in path and path.isascii() else unquote_to_bytes(path).decode("latin-1"),
        "QUERY_STRING": req.query,
        "RAW_URI": req.target,
        "REQUEST_URI": req.target,
        "SERVER_NAME": name,
        "SERVER_PORT": port,
        "SERVER_PROTOCOL": req.http_version,
        "wsgi.version": (1, 0),
        "wsgi.url_scheme": "http",
        "wsgi.input": _Input(req),
        "wsgi.errors": sys.stderr,
        # PROTOCOL.md §2.5: with lanes the app is called from several threads at once.
        "wsgi.multithread": _state.lanes_active,
        "wsgi.multiprocess": True,
        "wsgi.run_once": False,
        "wsgi.input_terminated": True,  # a chunked body ends without CONTENT_LENGTH
        # PROTOCOL.md §5.3: the protocol's metadata, under the library's own names.
        "afterburn.request_id": req.request_id,
        "afterburn.deadline": req.deadline,
        "afterburn.request": req,  # req.cancellation, req.log: see the README, "Lanes"
    }
    # The response's trailer fields: (name, value) pairs the app appends to this list until
    # its body iterable ends; they follow the chunked body (wsgi_responder).
    env["afterburn.response_trailers"] = []
    keys = _ENV_KEYS
    for fname, value in req.headers._pairs:
        key = keys.get(fname)
        if key is None:
            if fname == "transfer-encoding":
                continue  # the library de-chunks the body; wsgi.input_terminated says so
            key = "HTTP_" + fname.upper().replace("-", "_")
            if len(keys) < _ENV_KEYS_MAX:
                keys[fname] = key
        if key in env:
            env[key] += ("; " if key == "HTTP_COOKIE" else ", ") + value
        else:
            env[key] = value
    return env


def _status_code(status: str) -> int:
    code = status.split(" ", 1)[0]
    if len(code) != 3 or not code.isdigit():
        raise ValueError(f"WSGI status {status!r} does not start with a 3-digit code")
    return int(code)


def without_underscore_names(headers: Headers) -> Headers:
    """The fields of ``headers`` whose names hold no ``_`` (§5.5); ``headers`` itself when
    none does, the common case."""
    for name, _ in headers._pairs:
        if "_" in name:
            return Headers([(n, v) for n, v in headers if "_" not in n])
    return headers


def wsgi_responder(app: Callable[..., Any],
                   keep_underscore_headers: bool = False) -> Callable[[Request, ResponseWriter], None]:
    def respond(req: Request, w: ResponseWriter) -> None:
        state: list[Any] = []  # [status, headers] once start_response was called
        if not keep_underscore_headers:
            # §5.5: dropped from the Request too, so environ["afterburn.request"] shows the
            # app the same fields as the environ.
            req.headers = without_underscore_names(req.headers)

        def start_response(status: str, headers: list[tuple[str, str]], exc_info: Any = None):
            if exc_info is not None:
                if w.sent:
                    raise exc_info[1].with_traceback(exc_info[2])
            elif state:
                raise RuntimeError("start_response called twice without exc_info")
            state[:] = [_status_code(status), headers]
            return write

        def write(data: bytes) -> None:  # the legacy write() callable of PEP 3333
            if not w.started:
                w.start(state[0], state[1])
            w.write(data)

        environ = environ_for(req)
        trailers: list[tuple[str, str]] = environ["afterburn.response_trailers"]
        result = app(environ, start_response)
        try:
            if isinstance(result, (list, tuple)) and not w.started and not _wants_trailers(state[1], trailers):
                # The whole body is known: send it with Content-Length, in one write.
                body = b"".join(result)
                if not req._done:
                    req._discard(PRE_DRAIN)
                w.write_whole(state[0], state[1], body)
            else:
                for piece in result:
                    if not w.started:
                        w.start(state[0], state[1])
                    w.write(piece)
                if not w.started:
                    w.start(state[0], state[1], None if _wants_trailers(state[1], trailers) else 0)
        finally:
            close = getattr(result, "close", None)
            if close is not None:
                close()
        if not w.ended:  # write_whole ended it
            w.end(trailers)

    return respond


def _wants_trailers(headers: list[tuple[str, str]], trailers: list[tuple[str, str]]) -> bool:
    """Whether a response must be chunked for trailers: the app filled the list, or
    announced some with a ``Trailer`` field (RFC 9110 §6.6.2) to fill it later."""
    if trailers:
        return True
    for n, _ in headers:
        if n.lower() == "trailer":
            return True
    return False
