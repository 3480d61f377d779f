"""afterburn_runtime: the Python worker side of AfterBurn (spec/PROTOCOL.md, "AfterBurn/1").

An AfterBurn watchdog starts a function process once and hands it requests, as HTTP/1.1
on a pipe, for as long as it lives; start-up cost (imports, a model, a table) is paid
once. This package speaks the worker side::

    from afterburn_runtime import Response, serve

    TABLE = build_table()  # expensive, done once

    def handle(req):
        return Response.json({"answer": TABLE[req.path], "request": req.request_id})

    serve(handle)

``serve`` also takes ``async def`` handlers and typed handlers (a parameter annotated with a
dataclass or a pydantic model gets the JSON body); ``serve_wsgi(app)`` runs a WSGI app (Flask,
Django) and ``serve_asgi(app)`` an ASGI app (FastAPI, Starlette) unchanged. The launcher
``python -m afterburn_runtime module:attr`` protects stdout before it imports user code.
``afterburn_runtime.testing`` calls a handler or app in-process, without a watchdog.
Under the watchdog's fork mode (PROTOCOL.md §2.6) the same calls make the process a
template whose workers are forks of it; ``before_fork`` and ``after_fork`` register hooks
for that mode. When the watchdog gives a worker lanes (§2.5) the same calls serve several
requests at once: plain handlers and WSGI apps each on a thread, async handlers and ASGI
apps each a task on one event loop; ``req.cancellation``, ``req.log`` and
``RequestIdFilter`` are there for handlers that share a process. 50 ms after a request's
deadline the library cancels it: an async handler's task, a synchronous handler on the main
thread by raising :class:`Cancelled` in it, one on a lane's thread through ``req.cancelled``.

The import itself stays cheap (no asyncio, typing or json at import time): cold start is
what this library exists to amortise.
"""

from __future__ import annotations

from . import _handler, _response, _serve
from ._errors import Cancelled, ProtocolError
from ._fds import protect_early as _protect_early
from ._headers import Headers
from ._hooks import after_fork, before_fork
from ._request import Request
from ._response import Response
from ._version import __version__

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

__all__ = ["Cancelled", "Headers", "ProtocolError", "Request", "RequestIdFilter", "Response", "after_fork", "before_fork", "serve", "serve_asgi",
           "serve_wsgi", "__version__"]

def __getattr__(name: str) -> Any:
    if name == "RequestIdFilter":
        # Lazy: logging, which the import of this package does not pay for.
        from ._logger import RequestIdFilter

        return RequestIdFilter
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# PROTOCOL.md §2.4: in stdio mode, move the protocol off stdin and stdout now, before the
# code that imported this package prints anything.
_protect_early()


def serve(handler: Callable[..., Any], *, max_lanes: int | None = None,
          json_dumps: Callable[[Any], str | bytes] | None = None, shape: str | None = None) -> None:
    """Serves ``handler`` for every request until the watchdog shuts the worker down.

    ``handler(req)`` takes a :class:`Request` and returns a :class:`Response` (or ``str``,
    ``bytes``, a ``dict``/``list`` for JSON, ``None`` for an empty 200); it may be an
    ``async def``. Call ``serve`` once initialisation is done: its first act is to answer
    the watchdog's handshake, which marks the worker ready (PROTOCOL.md §3.1).

    It returns when the watchdog closes the request pipe between two requests (§9.4), so
    the process exits 0. When the worker must stop (a malformed request, a response that
    failed after it started, a failed handshake, a bad environment) it raises SystemExit
    with a non-zero status, and the watchdog starts a replacement.

    A handler that raises before its response started is answered 500 with the
    protocol's JSON error body (type ``handler_error``, never the exception's message);
    the traceback goes to stderr with the request id, and the worker keeps serving.

    With lanes (PROTOCOL.md §2.5) it serves up to ``max_lanes`` requests at once (default:
    AFTERBURN_PY_MAX_LANES, else 32 for a plain handler, each on a thread of its own, and
    1024 for an ``async def`` one, each a task on one event loop).

    ``json_dumps`` encodes every JSON body the library makes for the handler (a returned
    ``dict``, dataclass or model, ``Response.json`` without ``dumps=``): a function of one
    value returning ``str`` or ``bytes`` (``orjson.dumps``, or ``functools.partial(
    json.dumps, default=str)``); default ``json.dumps``.

    A handler whose parameter is annotated with a dataclass or a pydantic model is a typed
    handler: it gets the request's JSON body decoded into that type, and a body that does
    not decode is answered ``400 bad_request`` naming the field (see ``_typed``).

    ``shape`` serves a handler written for another platform, unchanged (PROTOCOL.md §13):
    ``"openfaas"`` (OpenFaaS ``python3-http``: ``handle(event, context)`` returning
    ``{"statusCode", "headers", "body"}``), ``"lambda"`` (AWS Lambda's HTTP event, payload
    2.0: ``handler(event, context)``) or ``"cloudevents"`` (``handle(cloud_event)``, the
    CloudEvents SDK's event; needs ``afterburn-runtime[cloudevents]``). A result the shape
    cannot turn into a response is answered ``500 handler_error``; a request that does not
    make the platform's event ``400 bad_request``.
    """
    if json_dumps is not None:
        _response.json_dumps[0] = json_dumps
    if shape is not None:
        # Lazy: handler shapes only; their adapters import json, base64 and urllib.parse.
        from ._shapes import adapt

        handler = adapt(shape, handler)
    elif _handler.looks_typed(handler):
        # Lazy: typed handlers only; _typed imports typing, inspect, dataclasses and json.
        from ._typed import typed_handler

        handler = typed_handler(handler)

    runners: list[Any] = []
    locks: list[Any] = []  # with lanes: the lock under which a lane makes the loop

    def runner() -> Any:
        if not runners:
            # Lazy: asyncio (tens of ms of start-up), for async handlers and bodies only.
            from ._aio import Runner

            runners.append(Runner())
        return runners[0]

    def lane_runner() -> Any:
        # With lanes the loop runs on a thread of its own; a plain handler may return an
        # awaitable, so the first lane that needs the loop makes it.
        with locks[0]:
            r = runner()
            r.start_thread()
            return r

    def with_lanes() -> Any:
        import threading

        locks.append(threading.Lock())
        if runners:
            lane_runner()  # an async handler: its loop starts its thread before any lane serves
        return _handler.plain_lane_responder(handler, lane_runner)

    def shutdown() -> None:
        if runners:
            runners[0].close()

    is_async = _handler.is_async_callable(handler)
    if is_async:
        runner()  # asyncio is imported and the loop made before the handshake
    _serve.run(_handler.plain_responder(handler, runner), shutdown=shutdown, max_lanes=max_lanes,
               default_lanes=_serve.DEFAULT_ASYNC_LANES if is_async else _serve.DEFAULT_SYNC_LANES,
               lanes=with_lanes)


def serve_wsgi(app: Callable[..., Any], *, keep_underscore_headers: bool = False,
               max_lanes: int | None = None) -> None:
    """Serves a WSGI application (PEP 3333: Flask, Django, ...) unchanged.

    The environ carries the request as a WSGI server would, ``wsgi.input`` streams the
    body, and ``afterburn.request_id``, ``afterburn.deadline`` and
    ``afterburn.cancellation`` the protocol's metadata (§5.3, §2.5). A response with a
    known length (a list of bytes, or a ``Content-Length``) is sent with
    ``Content-Length``, any other streamed as chunks.

    Request fields whose names hold ``_`` are dropped, as gunicorn and nginx do: in the
    environ ``X_Forwarded_For`` and ``X-Forwarded-For`` would both be
    ``HTTP_X_FORWARDED_FOR``, so a client could forge or join a field a proxy set
    (PROTOCOL.md §5.5). ``keep_underscore_headers=True`` keeps them.

    With lanes (§2.5) the app is called from up to ``max_lanes`` threads at once
    (``wsgi.multithread`` is then true; default AFTERBURN_PY_MAX_LANES, else 32).
    """
    # Lazy: WSGI apps only; _wsgi imports urllib.parse.
    from ._wsgi import wsgi_responder

    _serve.run(wsgi_responder(app, keep_underscore_headers), max_lanes=max_lanes)


def serve_asgi(app: Callable[..., Any], *, max_lanes: int | None = None) -> None:
    """Serves an ASGI 3 application (FastAPI, Starlette, ...) unchanged: HTTP scope, and
    the lifespan protocol when the app speaks it — startup runs before the handshake
    answers (PROTOCOL.md §3.1), shutdown when the watchdog closes the request pipe.

    ``scope["extensions"]["afterburn"]`` holds ``request_id``, ``deadline`` and
    ``request`` (§5.3). With lanes (§2.5) up to ``max_lanes`` requests run at once, each a
    task on one event loop, cancelled (``CancelledError``) when the watchdog cancels its
    exchange or its deadline passes (default AFTERBURN_PY_MAX_LANES, else 1024).
    """
    # Lazy: ASGI apps only; _asgi imports asyncio (tens of ms of start-up) and urllib.parse.
    from ._asgi import AsgiAdapter

    adapter = AsgiAdapter(app)
    _serve.run(adapter.respond, startup=adapter.startup, shutdown=adapter.shutdown, max_lanes=max_lanes,
               default_lanes=_serve.DEFAULT_ASYNC_LANES, lanes=adapter.with_lanes, serve_one=adapter.serve_lane)
