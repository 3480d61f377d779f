"""Plain handlers: ``def handle(req) -> Response`` and ``async def handle(req)``."""

from __future__ import annotations

from ._response import Response, to_response

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from ._aio import Runner
    from ._request import Request
    from ._writer import ResponseWriter

# How much unread request body the library reads before it sends a complete response, so
# that a framing error in a short body is answered as one (§8.8) rather than after a
# response that looks fine; the rest is drained after the response (§6.3).
PRE_DRAIN = 256 << 10

CO_COROUTINE = 0x80  # inspect.CO_COROUTINE, without importing inspect (cold start)


def is_async_callable(fn: Any) -> bool:
    """Whether calling fn makes a coroutine: ``async def`` functions and methods, and
    objects with an ``async def __call__``."""
    while hasattr(fn, "func") and hasattr(fn, "args"):  # functools.partial
        fn = fn.func
    code = getattr(fn, "__code__", None)
    if code is None:
        code = getattr(getattr(fn, "__call__", None), "__code__", None)
    return code is not None and bool(code.co_flags & CO_COROUTINE)


def looks_typed(handler: Any) -> bool:
    """Whether handler is a typed handler (_typed): a parameter annotated with a dataclass or
    a pydantic model. A cheap look that imports nothing: the annotation itself, or a name
    (``from __future__ import annotations``) looked up in the function's module."""
    fn = getattr(handler, "func", handler) if hasattr(handler, "args") else handler  # functools.partial
    ann = getattr(fn, "__annotations__", None)
    if ann is None:
        fn = getattr(fn, "__call__", None)
        ann = getattr(fn, "__annotations__", None)
    if not ann:
        return False
    for name, value in ann.items():
        if name == "return":
            continue
        if isinstance(value, str):
            value = _lookup(getattr(fn, "__globals__", {}), value)
        if isinstance(value, type) and (hasattr(value, "__dataclass_fields__") or hasattr(value, "model_fields")):
            return True
    return False


def _lookup(namespace: dict[str, Any], dotted: str) -> Any:
    """The object a dotted name (``Order``, ``models.Order``) names in namespace, or None."""
    first, _, rest = dotted.partition(".")
    obj = namespace.get(first)
    for part in rest.split(".") if rest else ():
        obj = getattr(obj, part, None)
    return obj


def plain_responder(handler: Callable[[Request], Any], runner: Callable[[], Runner]):
    """The responder of serve(): calls handler and writes what it returns. ``runner``
    gives the asyncio runner, made on first use unless serve() made it up front."""

    def respond(req: Request, w: ResponseWriter) -> None:
        result = handler(req)
        # The common case first: a Response (not a subclass, which could be awaitable) with
        # a bytes body needs neither the event loop nor the hasattr probes, which cost an
        # AttributeError each when they fail.
        if type(result) is Response and type(result.body) is bytes:
            write_response(result, req, w)
            return
        if hasattr(result, "__await__"):
            runner().run(_finish_async(result, req, w), req)
            return
        resp = to_response(result)
        if hasattr(resp.body, "__aiter__"):
            runner().run(write_stream_async(resp, w), req)
        else:
            write_response(resp, req, w)

    return respond


def plain_lane_responder(handler: Callable[[Request], Any], runner: Callable[[], Runner]):
    """The responder of serve() with lanes (PROTOCOL.md §2.5): called on the lane's thread.
    An awaitable result (an ``async def`` handler) runs as a task on the loop's thread,
    cancelled with its exchange; what it returns, and each piece of an async body, is
    written by the lane's thread, so a full response pipe never blocks the loop."""

    def respond(req: Request, w: ResponseWriter) -> None:
        result = handler(req)
        if hasattr(result, "__await__"):
            result = runner().run(_awaited(result), req)
        resp = to_response(result)
        if hasattr(resp.body, "__aiter__"):
            _write_async_body_from_lane(runner(), resp, req, w)
        else:
            write_response(resp, req, w)

    return respond


async def _awaited(awaitable: Any) -> Any:
    return await awaitable


_END = object()


def _write_async_body_from_lane(runner: Runner, resp: Response, req: Request, w: ResponseWriter) -> None:
    it = resp.body.__aiter__()  # type: ignore[union-attr]

    async def step() -> Any:
        try:
            return await it.__anext__()
        except StopAsyncIteration:
            return _END

    try:
        w.start(resp.status, resp.headers)
        if not w.bodyless:
            while (item := runner.run(step(), req)) is not _END:
                w.write(_piece(item))
    finally:
        aclose = getattr(it, "aclose", None)
        if aclose is not None:
            runner.run(aclose())  # not cancellable: the generator's cleanup runs whatever happened
    w.end(_trailers(resp))


async def _finish_async(awaitable: Any, req: Request, w: ResponseWriter) -> None:
    resp = to_response(await awaitable)
    if hasattr(resp.body, "__aiter__"):
        await write_stream_async(resp, w)
    else:
        write_response(resp, req, w)


def _trailers(resp: Response) -> list[tuple[str, str]] | None:
    t = resp.trailers
    return t() if callable(t) else t


def _piece(item: Any) -> bytes:
    if isinstance(item, bytes):
        return item
    if isinstance(item, str):
        return item.encode()
    if isinstance(item, (bytearray, memoryview)):
        return bytes(item)
    raise TypeError(f"a response body yielded {type(item).__name__}; want bytes or str")


def write_response(resp: Response, req: Request, w: ResponseWriter) -> None:
    """Writes resp through w: a bytes body with Content-Length, an iterable one streamed."""
    body = resp.body
    if isinstance(body, bytes):
        # The handler has returned: what it left of the request body is not wanted.
        if not req._done:
            req._discard(PRE_DRAIN)
        if resp.trailers is None:
            w.write_whole(resp.status, resp.headers, body)
        else:
            w.start(resp.status, resp.headers)
            w.write(body)
            w.end(_trailers(resp))
        return
    it = iter(body)  # type: ignore[arg-type]  # async iterables went to write_stream_async
    try:
        w.start(resp.status, resp.headers)
        if not w.bodyless:
            for item in it:
                w.write(_piece(item))
    finally:
        close = getattr(it, "close", None)
        if close is not None:
            close()
    w.end(_trailers(resp))


async def write_stream_async(resp: Response, w: ResponseWriter) -> None:
    """Writes resp's async iterable body through w as it is produced."""
    it = resp.body.__aiter__()  # type: ignore[union-attr]
    try:
        w.start(resp.status, resp.headers)
        if not w.bodyless:
            async for item in it:
                w.write(_piece(item))
    finally:
        aclose = getattr(it, "aclose", None)
        if aclose is not None:
            await aclose()
    w.end(_trailers(resp))
