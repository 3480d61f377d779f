"""The format of the log lines the library writes for a request (conformance contract C):
``AFTERBURN_LOG_FORMAT`` is ``text`` (the default) or ``json``, set by the watchdog's
``log_format``. In text mode a line is ``[request-id] message``; in json mode it is one JSON
object on one line, ``{"request_id": ..., "level": ..., "msg": ...}`` (``level`` where the
API has one: the ``logging`` level's lower-case name), which the watchdog merges into its own
JSON line (PROTOCOL.md §9.5). A message's newlines (a traceback) are escaped, so the object
stays one line.

Used by ``req.log``, ``req.logger`` and ``RequestIdFilter``; json is imported only in json
mode.
"""

from __future__ import annotations

import os

# Whether AFTERBURN_LOG_FORMAT is json; read once, on first use.
_json: bool | None = None


def json_mode() -> bool:
    global _json
    if _json is None:
        _json = os.environ.get("AFTERBURN_LOG_FORMAT", "text").strip().lower() == "json"
    return _json


def request_line(request_id: str | None, msg: str, level: str | None = None) -> str:
    """One log line of a request (``request_id`` None or "-" outside one), without its newline."""
    if not json_mode():
        return msg if request_id in (None, "-") else f"[{request_id}] {msg}"
    import json

    obj = {} if request_id in (None, "-") else {"request_id": request_id}
    if level is not None:
        obj["level"] = level
    obj["msg"] = msg
    return json.dumps(obj, ensure_ascii=False)
