"""The per-request logger (PROTOCOL.md §2.5): with several exchanges in flight, a log line
must say which request it belongs to."""

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


def request_logger(request_id: str) -> RequestLogger:
    return RequestLogger(LOGGER, {"request_id": request_id})
