"""The per-request logger (PROTOCOL.md §2.5): with several exchanges in flight, a log line
must say which request it belongs to.

``Request.logger`` tags the lines a handler writes through it. ``RequestIdFilter`` tags any
record, also one logged by a library deep below the handler that never saw the Request: the
serve loop keeps the request id of the exchange in a context variable (``_serve.CURRENT``),
which each lane's thread has to itself and which an asyncio task inherits from the lane that
started it."""

from __future__ import annotations

import logging

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


class RequestIdFilter(logging.Filter):
    """Sets ``record.request_id`` to the id of the request being served in this thread or
    task (``"-"`` outside one), for formats such as ``"[%(request_id)s] %(message)s"``.
    Add it to a handler: ``handler.addFilter(RequestIdFilter())``."""

    def filter(self, record: logging.LogRecord) -> bool:
        from ._serve import CURRENT

        if not hasattr(record, "request_id"):
            record.request_id = CURRENT.get()
        return True


def request_logger(request_id: str) -> RequestLogger:
    return RequestLogger(LOGGER, {"request_id": request_id})
