"""ResponseWriter: frames one response as it is produced (PROTOCOL.md §4.4, §6.1)."""

from __future__ import annotations

from ._errors import exchange_line
from ._response import field_lines, status_line

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable
    from typing import Any

# Bodies larger than this are handed to the sink as their own part instead of being
# copied behind the head (one write either way; see Conn.send).
_COPY_LIMIT = 64 << 10


# The status line and field lines of recent responses, encoded, with the Content-Length
# the handler declared: most handlers answer with the same few heads, which are then checked
# and encoded once (field_lines refuses a bad name or value before anything is cached).
# Keyed by the status and the fields as a tuple, so only equal heads share an entry; emptied
# when full, so handlers with ever-changing fields (dates, ETags) cannot grow it.
_HEADS: dict[tuple[Any, ...], tuple[bytes, int | None]] = {}
_HEADS_MAX = 256


def _head_lines(status: int, fields: Iterable[tuple[str, str]]) -> tuple[bytes, int | None]:
    """The status line and ``Name: value`` lines of a response head, encoded, and the
    Content-Length the handler declared (see field_lines)."""
    key = None
    if type(fields) is list:  # another iterable might be consumed by tuple()
        try:
            key = (status, tuple(fields))
            cached = _HEADS.get(key)
        except TypeError:  # a field given as a list, say: unhashable, so not cached
            key = cached = None
        if cached is not None:
            return cached
    lines, declared = field_lines(fields)
    entry = ((status_line(status) + "".join(lines)).encode("latin-1"), declared)
    if key is not None:
        if len(_HEADS) >= _HEADS_MAX:
            _HEADS.clear()
        _HEADS[key] = entry
    return entry


def _raw_head_lines(status: int, fields: list[Any]) -> tuple[bytes, int | None]:
    """_head_lines for fields given as ASGI gives them, ``(name, value)`` byte strings,
    decoded as latin-1 only when the head is not cached yet. Cached apart from str fields
    (the key holds the marker "raw"), so that no bytes is ever compared with a str."""
    try:
        key = (status, "raw", tuple(fields))
        cached = _HEADS.get(key)
    except TypeError:  # a field given as a list: unhashable, so not cached
        key = cached = None
    if cached is not None:
        return cached
    lines, declared = field_lines([(n.decode("latin-1"), v.decode("latin-1")) for n, v in fields])
    entry = ((status_line(status) + "".join(lines)).encode("latin-1"), declared)
    if key is not None:
        if len(_HEADS) >= _HEADS_MAX:
            _HEADS.clear()
        _HEADS[key] = entry
    return entry


class IncompleteResponse(Exception):
    """A response that cannot be ended honestly: its body is shorter than its declared
    Content-Length, or longer. PROTOCOL.md §8.3: it must not look complete."""


class ResponseWriter:
    """Frames one response and hands its bytes to ``send`` (a function taking a list of
    byte strings to write in order).

    ``start`` decides the framing from what is known: a body whose length is known gets
    ``Content-Length``; a streamed body gets the handler's own ``Content-Length`` if it set
    one (enforced), else ``Transfer-Encoding: chunked``. Responses to HEAD and 204/304
    responses never carry a body (§4.4). The head is held until the first body bytes or the
    end, so a small response leaves in one write; every ``write`` after that goes out at
    once, so streamed pieces reach the watchdog as they are produced (§6.1).

    ``exchange`` is the request's exchange token (§4.6): the head carries it, whatever the
    handler's fields say (field_lines drops theirs).
    """

    __slots__ = ("_send", "_pending", "_token", "is_head", "bodyless", "chunked", "length", "written", "sent",
                 "started", "ended")

    def __init__(self, send: Callable[[list[bytes]], None], is_head: bool = False,
                 exchange: str | None = None) -> None:
        self._send = send
        self._pending = b""
        self._token = exchange_line(exchange).encode("latin-1")
        self.is_head = is_head
        self.bodyless = False
        self.chunked = False
        self.length: int | None = None
        self.written = 0
        self.sent = False  # a byte of the response left: its status is final (§8.3)
        self.started = False
        self.ended = False  # the whole response is being or was handed to send

    def start(self, status: int, fields: Iterable[tuple[str, str]], length: int | None = None,
              _lines: Callable[[int, Any], tuple[bytes, int | None]] = _head_lines) -> None:
        """Decides the status, fields and framing; ``length`` is the body's length when known.
        (``_lines=_raw_head_lines``: the fields are ASGI's, byte strings.)"""
        if self.started:
            raise RuntimeError("the response was already started")
        head, declared = _lines(status, fields)
        if self.is_head or status == 204 or status == 304:
            self.bodyless = True
            # §4.4: MAY send the Content-Length the body would have had (never for 204).
            if status == 204:
                cl = None
            elif declared is not None:
                cl = declared
            else:
                cl = length if self.is_head else None
            framing = b"\r\n" if cl is None else b"Content-Length: %d\r\n\r\n" % cl
        elif length is not None or declared is not None:
            if length is not None and declared is not None and declared != length:
                raise IncompleteResponse(f"a Content-Length of {declared} for a body of {length} bytes")
            self.length = length if length is not None else declared
            framing = b"Content-Length: %d\r\n\r\n" % self.length
        else:
            self.chunked = True
            framing = b"Transfer-Encoding: chunked\r\n\r\n"
        # The token goes after the cached lines (_HEADS is shared by every exchange).
        self._pending = head + self._token + framing if self._token else head + framing
        self.started = True

    def write_whole(self, status: int, fields: Iterable[tuple[str, str]], body: bytes,
                    _lines: Callable[[int, Any], tuple[bytes, int | None]] = _head_lines) -> None:
        """The whole response at once, a bytes body with its length: what ``start(status,
        fields, len(body))``, ``write(body)`` and ``end()`` do, in one call, for the most
        common response."""
        self.start(status, fields, len(body), _lines)
        n = len(body)
        if n == 0 or self.bodyless:
            self.written = n
            self.end()
            return
        # start() made length == n, or raised for a declared Content-Length that differs.
        self.written = n
        self.sent = True
        # Ended before the write: the deadline alarm (_alarm) may raise as the write returns,
        # and the response it crossed is whole.
        self.ended = True
        pending = self._pending
        self._pending = b""
        self._send([pending + body] if n <= _COPY_LIMIT else [pending, body])

    def write(self, data: bytes) -> None:
        """Sends a piece of the body at once (one chunk when chunked)."""
        n = len(data)
        if n == 0:
            return
        if self.bodyless:
            self.written += n  # HEAD: the bytes only counted
            return
        if self.length is not None and self.written + n > self.length:
            raise IncompleteResponse(f"more body than the Content-Length of {self.length} bytes")
        self.written += n
        if self.chunked:
            prefix = self._pending + b"%x\r\n" % n
            parts = [prefix + data + b"\r\n"] if n <= _COPY_LIMIT else [prefix, data, b"\r\n"]
        elif not self._pending:
            parts = [data]
        else:
            parts = [self._pending + data] if n <= _COPY_LIMIT else [self._pending, data]
        self._pending = b""
        self.sent = True
        self._send(parts)

    def end(self, trailers: Iterable[tuple[str, str]] | None = None) -> None:
        """Ends the response: the last chunk and trailers of a chunked body, or a check that
        a Content-Length body is complete."""
        tail = b""
        if self.chunked:
            lines = field_lines(trailers)[0] if trailers else ()
            tail = b"0\r\n" + "".join(lines).encode("latin-1") + b"\r\n"
        elif self.length is not None and self.written < self.length:
            raise IncompleteResponse(f"{self.written} bytes of a Content-Length of {self.length}")
        out = self._pending + tail
        self._pending = b""
        self.ended = True  # before the write, as in write_whole
        if out:
            self.sent = True
            self._send([out])
