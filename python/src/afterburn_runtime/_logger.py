"""The per-request logger (PROTOCOL.md §2.5): with several exchanges in flight, a log line
must say which request it belongs to.

``Request.logger`` tags the lines a handler writes through it. ``RequestIdFilter`` tags any
record, also one logged by a library deep below the handler that never saw the Request: the
exchange loop keeps the id of the request it serves in a context variable (``_state.CURRENT``),
which each lane's thread has to itself and which an asyncio task inherits from the lane that
started it.

With ``AFTERBURN_LOG_FORMAT=json`` (conformance contract C, ``_logline``) both make the
record's message the JSON line ``{"request_id": ..., "level": ..., "msg": ...}``, its
arguments and traceback folded in, so that a handler formatting ``"%(message)s"`` writes one
JSON object per line; a record is turned once, whichever of the two sees it first."""

from __future__ import annotations

import logging

from ._logline import json_mode, request_line
from ._state import CURRENT

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import MutableMapping
    from typing import Any

LOGGER = logging.getLogger("afterburn_runtime.request")


class RequestLogger(logging.LoggerAdapter):
    """Puts ``[request-id] `` before each message, and the id in the record's
    ``request_id`` attribute for formats that want it elsewhere."""

    def process(self, msg: Any, kwargs: MutableMapping[str, Any]) -> tuple[Any, MutableMapping[str, Any]]:
        rid = self.extra["request_id"]  # type: ignore[index]
        kwargs["extra"] = {**kwargs.get("extra", {}), "request_id": rid}
        return f"[{rid}] {msg}", kwargs

    def log(self, level: int, msg: Any, *args: Any, **kwargs: Any) -> None:
        if not json_mode():
            super().log(level, msg, *args, **kwargs)
            return
        if not self.isEnabledFor(level):
            return
        rid = self.extra["request_id"]  # type: ignore[index]
        if len(args) == 1 and isinstance(args[0], dict) and args[0]:
            args = args[0]  # type: ignore[assignment]  # as LogRecord takes a single mapping
        text = _text(str(msg) % args if args else str(msg), kwargs.pop("exc_info", None))
        kwargs.pop("stack_info", None)
        kwargs["extra"] = {**kwargs.get("extra", {}), "request_id": rid, _TURNED: True}
        self.logger.log(level, request_line(rid, text, logging.getLevelName(level).lower()), **kwargs)


class RequestIdFilter(logging.Filter):
    """Sets ``record.request_id`` to the id of the request being served in this thread or
    task (``"-"`` outside one), for formats such as ``"[%(request_id)s] %(message)s"``.
    Add it to a handler: ``handler.addFilter(RequestIdFilter())``."""

    def filter(self, record: logging.LogRecord) -> bool:
        if not hasattr(record, "request_id"):
            record.request_id = CURRENT.get()
        if json_mode() and not getattr(record, _TURNED, False):
            text = _text(record.getMessage(), record.exc_info)
            record.msg = request_line(record.request_id, text, record.levelname.lower())
            record.args = ()
            record.exc_info = None
            record.exc_text = None
            setattr(record, _TURNED, True)
        return True


# The record attribute that marks a record whose message is already the JSON line.
_TURNED = "afterburn_json"


def _text(message: str, exc_info: Any) -> str:
    """The message with the traceback of ``exc_info`` (a logging argument) after it."""
    if not exc_info:
        return message
    import sys
    import traceback

    if exc_info is True:
        exc_info = sys.exc_info()
    elif isinstance(exc_info, BaseException):
        exc_info = (type(exc_info), exc_info, exc_info.__traceback__)
    if exc_info[0] is None:
        return message
    return message + "\n" + "".join(traceback.format_exception(*exc_info)).rstrip("\n")


def request_logger(request_id: str) -> RequestLogger:
    return RequestLogger(LOGGER, {"request_id": request_id})
