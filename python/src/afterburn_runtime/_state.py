"""The process's shared state: the library's log, the request id of the exchange being
served, and whether the worker serves lanes.

Every other module may import this one; it imports no module of the package but the leaf
``_logline`` (tests/test_layout.py checks both), so nothing below the serve loop ever needs
to import the serve loop back to log or to read the request id.
"""

from __future__ import annotations

import os
from contextvars import ContextVar

from ._logline import json_mode, request_line

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ._request import Request

# The request id of the exchange being served in this thread (each lane's thread has its
# own) or asyncio task (copied from the lane that started it): RequestIdFilter reads it,
# the exchange sets it and sets it back to "-" when it ends.
CURRENT: ContextVar[str] = ContextVar("afterburn_request_id", default="-")

# True once this process serves more than one lane (PROTOCOL.md §2.5): a WSGI app is then
# called from several threads at once (wsgi.multithread). Set by serve_lanes only, through
# serving_lanes().
lanes_active = False


def serving_lanes() -> None:
    """Records that this process serves lanes (§2.5); it never goes back to one lane."""
    global lanes_active
    lanes_active = True


def log(message: str) -> None:
    """One record on stderr, in one write, so that it stays one block in the watchdog's
    log (§9.5) whatever else the process writes."""
    data = (message if message.endswith("\n") else message + "\n").encode(errors="replace")
    while data:
        data = data[os.write(2, data) :]


def log_request(request_id: str | None, message: str, level: str = "error") -> None:
    """One record of the library's own about a request: ``[request-id] message``, or with
    AFTERBURN_LOG_FORMAT=json one JSON line (conformance contract C), a traceback in it."""
    if json_mode():
        log(request_line(request_id, message, level))
    else:
        log(f"[{request_id or '-'}] {message}")


def log_exception(rid: str, req: Request, error: BaseException) -> None:
    """§8.3: the exception and its stack on stderr, in one write whose first line names the
    request id. The path is logged without the query, which may hold secrets (§9.5)."""
    import traceback

    tb = "".join(traceback.format_exception(type(error), error, error.__traceback__))
    log_request(rid, f"afterburn: exception serving {req.method} {req.path}\n{tb.rstrip()}")


def new_request_id() -> str:
    """A request id as the watchdog makes one: 128 random bits as 32 lower-case hex digits
    (§5.1); for a legacy watchdog that sends none (§11.1)."""
    return os.urandom(16).hex()
