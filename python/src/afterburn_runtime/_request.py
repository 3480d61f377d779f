"""Request: what a handler receives (PROTOCOL.md §4.2, §5)."""

from __future__ import annotations

import time

from ._headers import Headers
from ._logline import request_line
from ._state import log

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from typing import Any

    from ._cancel import Cancellation

    # A body source returns the next piece of the de-chunked body, b"" at its end. It may
    # raise ProtocolError when the request stream breaks (§8.8).
    BodySource = Callable[[], bytes]


def _no_body() -> bytes:
    return b""


class Request:
    """One request.

    Attributes:
        method: the request method, e.g. ``"GET"``.
        target: the request-target exactly as sent, e.g. ``"/a%20b?x=1"`` (§4.2).
        path: the raw path of the target, before ``?``, not percent-decoded.
        query: the raw query after the first ``?``, ``""`` without one.
        headers: every field, repeated ones in order (:class:`Headers`). The watchdog's
            ``AfterBurn-Request-Id`` and ``AfterBurn-Timeout-Ms`` are not among them (§5.3):
            their meaning is in ``request_id`` and ``deadline``; nor is ``AfterBurn-Exchange``,
            which the library echoes in the response itself (§4.6).
        request_id: the request id of §5.1 (the one the client and the access log see).
        deadline: the ``time.monotonic()`` instant after which the watchdog stops waiting
            (§5.2), or None without one.

    The body is a stream, read as the watchdog writes it (§6.1), also while the response is
    being written (full duplex, §6.2): ``read(n)``, ``readline()``, or iterate over
    ``req.stream()``. ``req.body`` reads it whole, ``req.text()`` and ``req.json()``
    decode it. What the handler leaves unread is drained by the library (§6.3).
    """

    __slots__ = ("method", "target", "path", "query", "headers", "request_id", "deadline",
                 "http_version", "_source", "_buf", "_done", "_body", "_read_any", "_trailers", "_args",
                 "_cancel")

    def __init__(
        self,
        method: str,
        target: str,
        headers: Headers,
        request_id: str,
        deadline: float | None = None,
        source: BodySource | None = None,
        *,
        path: str | None = None,
        query: str | None = None,
        http_version: str = "HTTP/1.1",
    ) -> None:
        self.method = method
        self.target = target
        if path is None:
            path, _, query = target.partition("?")
        self.path = path
        self.query = query or ""
        self.headers = headers
        self.request_id = request_id
        self.deadline = deadline
        self.http_version = http_version
        self._source = source or _no_body
        self._buf = b""
        self._done = source is None
        self._body: bytes | None = None
        self._read_any = False
        self._trailers: Headers | None = None
        self._args: dict[str, list[str]] | None = None
        # Made on first use, or by the lane before the handler runs (PROTOCOL.md §2.5).
        self._cancel: Cancellation | None = None

    # -- metadata ----------------------------------------------------------------------

    @property
    def time_remaining(self) -> float | None:
        """Seconds left before the deadline, never negative; None without a deadline."""
        if self.deadline is None:
            return None
        left = self.deadline - time.monotonic()
        return left if left > 0 else 0.0

    @property
    def cancellation(self) -> Cancellation:
        """This exchange's cancellation (PROTOCOL.md §2.5, §5.2): ``is_set()`` is true once
        the watchdog cancelled the exchange or its deadline passed; ``wait(timeout)``
        blocks until then (or ``timeout``) and returns ``is_set()``. For a handler on a
        thread; an async handler is cancelled as an asyncio task instead."""
        if self._cancel is None:
            # Lazy: threading, for the requests that ask for their cancellation (cold start).
            from ._cancel import Cancellation

            self._cancel = Cancellation(self.deadline)
        return self._cancel

    @property
    def cancelled(self) -> bool:
        """Whether the exchange is cancelled: ``cancellation.is_set()``."""
        return self.cancellation.is_set()

    def log(self, message: str) -> None:
        """Writes ``[request-id] message`` to stderr in one write: a line that stays
        attributable to its request when several are in flight (PROTOCOL.md §2.5). With
        ``AFTERBURN_LOG_FORMAT=json``, the JSON line ``{"request_id": ..., "msg": ...}``."""
        log(request_line(self.request_id, message))

    @property
    def logger(self) -> Any:
        """A ``logging.LoggerAdapter`` of the logger ``afterburn_runtime.request`` that
        puts ``[request-id] `` before every message (with ``AFTERBURN_LOG_FORMAT=json``
        makes the message the JSON line ``{"request_id", "level", "msg"}``) and the id in
        ``extra["request_id"]``; its records go wherever the application's logging
        configuration sends them."""
        # Lazy: logging, which only a handler that asks for the logger pays for.
        from ._logger import request_logger

        return request_logger(self.request_id)

    @property
    def args(self) -> dict[str, list[str]]:
        """The query decoded into lists of values per name (``urllib.parse.parse_qs``)."""
        if self._args is None:
            from urllib.parse import parse_qs

            self._args = parse_qs(self.query, keep_blank_values=True)
        return self._args

    def arg(self, name: str, default: str | None = None) -> str | None:
        """The first value of query parameter ``name``, or ``default``."""
        values = self.args.get(name)
        return values[0] if values else default

    @property
    def trailers(self) -> Headers:
        """The trailer fields of a chunked request body, once the body has been read."""
        return self._trailers if self._trailers is not None else Headers()

    def _set_trailers(self, pairs: list[tuple[str, str]]) -> None:
        self._trailers = Headers(pairs)

    # -- the body as a stream -------------------------------------------------------------

    def _pull(self) -> bytes:
        if self._done:
            return b""
        piece = self._source()
        if not piece:
            self._done = True
        return piece

    def read(self, size: int = -1) -> bytes:
        """Up to ``size`` bytes of the body (all the rest with -1); b"" at its end. It waits
        only until some bytes are there, like a pipe's read."""
        self._read_any = True
        if self._buf:
            data = self._buf
            if 0 <= size < len(data):
                self._buf = data[size:]
                return data[:size]
            self._buf = b""
            if size < 0:
                return data + self._read_all()
            return data
        if size < 0:
            return self._read_all()
        if size == 0:
            return b""
        data = self._pull()
        if len(data) > size:
            self._buf = data[size:]
            data = data[:size]
        return data

    async def aread(self, size: int = -1) -> bytes:
        """``read(size)`` for an ``async def`` handler: with lanes (PROTOCOL.md §2.5) the
        pipe is read on the lane's thread, so a body that arrives slowly holds this
        request only, where ``read`` would hold the event loop and every lane on it."""
        # Lazy: asyncio; an async handler has imported it already, a sync one never does.
        from ._aio import lane_call

        return await lane_call(self.read, size)

    def readexactly(self, size: int) -> bytes:
        """Exactly ``size`` bytes, fewer only when the body ends first."""
        parts: list[bytes] = []
        while size > 0:
            data = self.read(size)
            if not data:
                break
            parts.append(data)
            size -= len(data)
        return b"".join(parts)

    def readline(self, limit: int = -1) -> bytes:
        """The next line of the body, ``\\n`` included (the last one may lack it)."""
        self._read_any = True
        buf = self._buf
        while True:
            i = buf.find(b"\n")
            if i >= 0 or 0 <= limit <= len(buf):
                end = i + 1 if i >= 0 else limit
                if 0 <= limit < end:
                    end = limit
                self._buf = buf[end:]
                return buf[:end]
            piece = self._pull()
            if not piece:
                self._buf = b""
                return buf
            buf += piece

    def __iter__(self) -> Iterator[bytes]:
        """The body line by line."""
        while True:
            line = self.readline()
            if not line:
                return
            yield line

    def stream(self) -> Iterator[bytes]:
        """The body in pieces as they arrive."""
        self._read_any = True
        if self._buf:
            data, self._buf = self._buf, b""
            yield data
        while True:
            piece = self._pull()
            if not piece:
                return
            yield piece

    def _discard(self, limit: int) -> None:
        """Drops up to ``limit`` bytes of what is left of the body (the library's job once
        the handler has returned, §6.3)."""
        self._buf = b""
        while not self._done and limit > 0:
            limit -= len(self._pull())

    def _read_all(self) -> bytes:
        first = self._pull()
        if not first:
            return b""
        piece = self._pull()
        if not piece:
            return first  # a body that arrived in one piece, the common case: no copy
        parts = [first, piece]
        while True:
            piece = self._pull()
            if not piece:
                return b"".join(parts)
            parts.append(piece)

    # -- the body whole -------------------------------------------------------------------

    @property
    def body(self) -> bytes:
        """The whole body (read on first use and kept)."""
        if self._body is None:
            if self._read_any:
                raise RuntimeError("the request body was already read in part as a stream")
            self._body = self._read_all()
            self._buf = self._body  # a later read() sees the body from its start
        return self._body

    def text(self, encoding: str = "utf-8") -> str:
        """The body decoded as text."""
        return self.body.decode(encoding)

    def json(self) -> Any:
        """The body decoded as JSON."""
        import json

        return json.loads(self.body)

    def __repr__(self) -> str:
        return f"<Request {self.method} {self.target} id={self.request_id}>"
