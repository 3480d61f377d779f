"""Cancellation of an exchange, and the cancel pipe that fires it (PROTOCOL.md §2.5, §5.2).

Each exchange has a Cancellation of its own, so that a cancellation can never reach the
lane's next exchange: a new one is made for every request. It fires when the watchdog
writes ``cancel TOKEN`` for the exchange's token on the cancel pipe, and counts as fired
once the exchange's deadline + GRACE has passed (§5.2, §2.5: the library's own
cancellation comes 50 ms after the deadline, the watchdog's 504 first), without a timer:
``is_set`` and ``wait`` look at the clock.

A handler on a thread polls ``req.cancelled`` or blocks in ``req.cancellation.wait(t)``;
an async handler's task is cancelled (``CancelledError``), which the lane arranges through
``set_callback``; a synchronous handler on the main thread is also interrupted by the alarm
(``_alarm``), unless it has already seen the flag (``observed``).
"""

from __future__ import annotations

import os
import threading
import time

# PROTOCOL.md §2.5: how long after the deadline the library fires its own cancellation.
GRACE = 0.05

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable


class Cancellation:
    """Whether the exchange is cancelled: by the watchdog (the cancel pipe) or by its deadline.

    ``is_set()`` and ``wait(timeout)`` behave as those of ``threading.Event``."""

    __slots__ = ("deadline", "observed", "_fires_at", "_fired", "_event", "_lock", "_callback")

    def __init__(self, deadline: float | None = None) -> None:
        self.deadline = deadline
        self._fires_at = None if deadline is None else deadline + GRACE
        # The handler has seen the cancellation (the flag true, or the alarm's exception):
        # it is delivered once, and the alarm does not interrupt a handler that is stopping.
        self.observed = False
        self._fired = False  # fire() was called
        # Made by the first wait(): most exchanges never wait, and an Event costs more to
        # make than the rest of an exchange's bookkeeping.
        self._event: threading.Event | None = None
        self._lock = threading.Lock()
        self._callback: Callable[[], None] | None = None

    def is_set(self) -> bool:
        """True once the watchdog cancelled the exchange or 50 ms after its deadline."""
        if self._fired or (self._fires_at is not None and time.monotonic() >= self._fires_at):
            self.observed = True
            return True
        return False

    def wait(self, timeout: float | None = None) -> bool:
        """Blocks until the exchange is cancelled or ``timeout`` seconds pass; returns
        ``is_set()``."""
        if self._fires_at is not None:
            left = min(max(self._fires_at - time.monotonic(), 0.0), threading.TIMEOUT_MAX)
            timeout = left if timeout is None else min(timeout, left)
        with self._lock:
            event = self._event
            if event is None:
                event = self._event = threading.Event()
                if self._fired:
                    event.set()
        event.wait(timeout)
        return self.is_set()

    def fire(self) -> None:
        """Cancels the exchange (the cancel pipe named its token, or its deadline passed).
        Only the first call does anything: a handler that caught the cancellation (an
        asyncio task that caught CancelledError) is not cancelled a second time while it
        writes its answer."""
        with self._lock:
            if self._fired:
                return
            self._fired = True
            if self._event is not None:
                self._event.set()
            callback = self._callback
        if callback is not None:
            callback()

    def set_callback(self, callback: Callable[[], None] | None) -> None:
        """``callback`` runs (on the cancel pipe's thread) when the exchange is cancelled;
        at once when it already is. None removes it."""
        with self._lock:
            self._callback = callback
            fired = self._fired
        if callback is not None and fired:
            callback()


# A line longer than this is no cancellation (a token is at most 64 characters, §4.6).
_MAX_LINE = 256


class CancelReader:
    """Reads the cancel pipe for the life of the worker, on a thread of its own, and fires
    the Cancellation of the exchange in flight whose token a line names (§2.5). Tokens it
    does not carry, and any other line, are ignored; EOF ends the reading, nothing else."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self._lock = threading.Lock()
        self._live: dict[str, Cancellation] = {}
        self._thread = threading.Thread(target=self._read, name="afterburn-cancel", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def register(self, token: str, cancellation: Cancellation) -> None:
        with self._lock:
            self._live[token] = cancellation

    def unregister(self, token: str) -> None:
        with self._lock:
            self._live.pop(token, None)

    def _read(self) -> None:
        held = b""
        while True:
            try:
                data = os.read(self.fd, 4096)
            except OSError:
                data = b""
            if not data:
                os.close(self.fd)
                return
            held += data
            *lines, held = held.split(b"\n")
            if len(held) > _MAX_LINE:
                held = b""  # and the rest of that line is dropped with it below
            for line in lines:
                self.line(line)

    def line(self, line: bytes) -> None:
        """One line of the cancel pipe, without its newline."""
        verb, _, token = line.partition(b" ")
        if verb != b"cancel" or not token or len(token) > 64 or not token.isalnum() or not token.isascii():
            return
        with self._lock:
            cancellation = self._live.get(token.decode("ascii"))
        if cancellation is not None:
            cancellation.fire()
