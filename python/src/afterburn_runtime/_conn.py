"""Conn: the I/O shell around the parser, blocking reads and writes on the protocol pipes."""

from __future__ import annotations

import sys

from ._errors import ProtocolError, error_response
from ._parser import NEED_DATA, EndOfMessage, RequestParser

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

    from ._alarm import Armed
    from ._parser import RequestHead, _Sentinel
    from ._request import Request

# One read takes what a pipe holds (64 KiB on Linux) in one system call.
_READ_SIZE = 64 << 10
# POSIX's PIPE_BUF on Linux: a pipe write of at most this many bytes is atomic.
_PIPE_BUF = 4096
# Linux's ioctl for the bytes a pipe holds (termios.FIONREAD, without importing termios); 0
# elsewhere, where send_now never writes.
_FIONREAD = 0x541B if sys.platform.startswith("linux") else 0
_INT0 = bytes(4)
# fcntl, imported by the first send_now (lanes only: a dlopen the cold start need not pay).
_fcntl = None


class Conn:
    """The request pipe, read through one parser for the life of the worker (bytes read
    ahead belong to the next request and are never dropped, RESEARCH.md §1), and the
    response pipe, written with plain blocking writes: nothing is buffered in the process,
    so every write reaches the watchdog at once (§6.1).

    The handler pulls body bytes on demand (``pull``), also while it writes its response,
    which is all full duplex needs (§6.2) without threads.

    ``read(n)`` and ``write(data)`` are the pipes' system calls: ``os.read`` on the request
    descriptor and ``os.write`` on the response descriptor when serving; in-memory ones
    in the test helper.
    """

    __slots__ = ("_read", "_write", "parser", "fatal", "broken", "body_done", "request", "exchange", "refused",
                 "alarm", "out_fd", "_pipe_size")

    def __init__(self, read: Callable[[int], bytes], write: Callable[[bytes | memoryview], int],
                 parser: RequestParser, out_fd: int | None = None) -> None:
        self._read = read
        self._write = write
        self.parser = parser
        # The response descriptor when ``write`` writes it, for send_now; None else.
        self.out_fd = out_fd
        self._pipe_size: int | None = None
        # The first framing error met in a request body. After it the stream cannot be
        # trusted: the exchange ends with its error response if nothing was sent, and
        # the worker stops (PROTOCOL.md §8.8), whatever the handler did with the error.
        self.fatal: ProtocolError | None = None
        # A failed write on the response pipe: the watchdog is gone, nothing more to do.
        self.broken: OSError | None = None
        self.body_done = True
        self.request: Request | None = None
        # The exchange token of the request being answered (PROTOCOL.md §4.6), None when it
        # carried none: every response head written for it carries the token.
        self.exchange: str | None = None
        # §3.4: the handshake offered no version this library speaks; with lanes this ends
        # the whole worker, where a fault ends its lane (§2.5).
        self.refused = False
        # The deadline alarm of the exchange whose handler runs (_alarm), None without one:
        # every read and write of a pipe is shielded from it, so that it can never cut a
        # response in half or drop request bytes read but not parsed.
        self.alarm: Armed | None = None

    def event(self) -> RequestHead | bytes | EndOfMessage | _Sentinel:
        """The parser's next event (never NEED_DATA), reading the pipe until there is one."""
        parser = self.parser
        while True:
            ev = parser.next_event()
            if ev is not NEED_DATA:
                return ev
            data = self._read(_READ_SIZE)
            if data:
                parser.feed(data)
            else:
                parser.feed_eof()

    def begin(self, request: Request | None, has_body: bool = True) -> None:
        self.request = request
        self.body_done = False
        if not has_body:
            # The parser's end of a bodiless message is already there: take it now, straight
            # from the parser (it needs no read and cannot fail).
            ev = self.parser.next_event()
            assert isinstance(ev, EndOfMessage) and not ev.trailers
            self.body_done = True

    def pull(self) -> bytes:
        """The next piece of the current request's body; b"" at its end."""
        if self.body_done:
            return b""
        alarm = self.alarm
        if alarm is None:
            return self._pull()
        alarm.shield(mask=False)
        try:
            return self._pull()
        finally:
            alarm.unshield()

    def _pull(self) -> bytes:
        try:
            ev = self.parser.next_event()
            if ev is NEED_DATA:
                ev = self.event()
        except ProtocolError as e:
            if self.fatal is None:
                self.fatal = e
            raise
        if type(ev) is bytes:
            return ev
        assert isinstance(ev, EndOfMessage)
        self.body_done = True
        if ev.trailers and self.request is not None:
            self.request._set_trailers(ev.trailers)
        return b""

    def drain(self, limit: int = -1) -> bool:
        """Reads and drops what the handler left of the body, up to ``limit`` bytes (all
        with -1); tells whether the body's end was reached (§6.3)."""
        while not self.body_done:
            if limit == 0:
                return False
            piece = self.pull()
            if limit > 0:
                limit = max(limit - len(piece), 0)
        return True

    def send(self, parts: list[bytes]) -> None:
        """Writes parts to the response pipe, in full."""
        alarm = self.alarm
        if alarm is None:
            return self._send(parts)
        # SIGALRM is blocked for the write (the kernel holds it) unless the write is one of
        # at most PIPE_BUF bytes, which a signal cannot split: a pipe takes it whole or,
        # interrupted while it waits for room, none of it (EINTR, which PEP 475 retries, the
        # shield only marking the exchange). Two system calls less for most responses.
        alarm.shield(mask=len(parts) != 1 or len(parts[0]) > _PIPE_BUF)
        try:
            self._send(parts)
        finally:
            alarm.unshield()

    def body_ready(self) -> bool:
        """Whether ``pull`` would return without reading the request pipe: the body ended,
        or bytes of a Content-Length body are held (usually the whole of a small body,
        which the watchdog writes with its head)."""
        return self.body_done or self.parser.body_held()

    def send_now(self, parts: list[bytes]) -> bool:
        """Writes parts and returns True when that cannot block: the response pipe is empty
        (FIONREAD) and they fit in it (F_GETPIPE_SZ). Only the exchange's own writes fill
        the pipe while it runs, so the room can only grow between the look and the write.
        False, with nothing written, when it could block or the descriptor is no pipe.
        For a lane's event loop (PROTOCOL.md §2.5), which must never block on a pipe but
        saves two hand-offs to the lane's thread when it need not."""
        global _fcntl
        fd = self.out_fd
        if fd is None or self.alarm is not None:
            return False
        size = self._pipe_size
        if size is None:
            if _fcntl is None:
                import fcntl as _fcntl
            try:
                getsize = getattr(_fcntl, "F_GETPIPE_SZ", 0)
                size = _fcntl.fcntl(fd, getsize) if getsize and _FIONREAD else 0
            except OSError:
                size = 0  # not a pipe
            self._pipe_size = size
        total = 0
        for data in parts:
            total += len(data)
        if total > size:
            return False
        try:
            held = _fcntl.ioctl(fd, _FIONREAD, _INT0)
        except OSError:
            return False
        if held != _INT0:
            return False
        self._send(parts)
        return True

    def _send(self, parts: list[bytes]) -> None:
        write = self._write
        try:
            for data in parts:
                n = write(data)
                if n < len(data):  # a pipe takes a large write in pieces
                    view = memoryview(data)[n:]
                    while view:
                        view = view[write(view) :]
        except OSError as e:
            self.broken = e
            raise

    def send_error(self, type: str, request_id: str | None, extra: str = "") -> None:
        """Writes a complete §8.1 error response for the current exchange."""
        self.send([error_response(type, request_id, extra, self.exchange)])
