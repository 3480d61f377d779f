"""The OpenFaaS classic ``python3-http`` shape (PROTOCOL.md §13, ``openfaas-http``)::

    def handle(event, context):
        return {"statusCode": 200, "body": {"hello": event.query.get("name")}}

What the template (openfaas/python-flask-template, ``python3-http``: Flask behind waitress)
gives a handler, and what it makes of the result, held to ``conformance/shapes/
openfaas-http.json``; where the vectors are silent, as the template does:

- ``event.body`` the body (bytes), ``event.method``, ``event.path`` (percent-decoded, as
  Flask's ``request.path``), ``event.headers`` (case-insensitive; ``get`` joins a repeated
  field's values with ``", "`` as a WSGI server does, ``getlist`` keeps them apart; names
  iterate Title-Cased as Werkzeug's), ``event.query`` (a dict of first values, ``getlist``
  for all, as Werkzeug's ``MultiDict``); ``context.hostname`` (``$HOSTNAME``, else
  ``localhost``).
- A dict result: ``statusCode`` (default 200; an integer from 100 to 599, else the
  handler's error), ``headers`` (a dict or a list of pairs; values made strings), ``body``:
  a dict is compact JSON with ``Content-Type: application/json`` (keys sorted, non-ASCII
  escaped, as Flask's ``jsonify``, without its final newline), bytes as they are, anything
  else ``str(body)``. ``None`` is an empty 200. Like Flask, a ``str``/``bytes`` result is a
  200 body, a ``list`` JSON, and ``(body, status)``, ``(body, headers)``, ``(body, status,
  headers)`` tuples work; a body without a ``Content-Type`` is ``text/html; charset=utf-8``
  (Flask's default). A :class:`Response` is sent as it is.

Not carried over: Flask's routing answers ``OPTIONS`` itself and ``405`` to methods other
than GET, PUT, POST, PATCH, DELETE (and HEAD); here every method reaches the handler.
"""

from __future__ import annotations

import json
import os
from urllib.parse import parse_qsl, unquote

from ._headers import Headers
from ._request import Request
from ._response import Response

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

# Flask's default mimetype for a body it is given without one.
HTML = "text/html; charset=utf-8"


class EventHeaders(Headers):
    """The request's fields as ``event.headers``: ``req.headers`` as Werkzeug's
    ``EnvironHeaders`` reads them. ``get(name)`` and ``[name]`` give a repeated field's
    values joined with ``", "`` (one WSGI environ key each); ``getlist``/``get_all`` each
    value apart; iteration, ``keys()`` and ``items()`` give Title-Cased names."""

    __slots__ = ()

    def get(self, name: str, default: Any = None, type: Callable[[str], Any] | None = None) -> Any:
        values = self.get_all(name)
        if not values:
            return default
        value = ", ".join(values)
        if type is None:
            return value
        try:
            return type(value)
        except ValueError:
            return default  # as Werkzeug's get(..., type=int) does

    def getlist(self, name: str) -> list[str]:
        return self.get_all(name)

    def __iter__(self) -> Any:
        return iter(self.items())

    def items(self) -> list[tuple[str, str]]:  # type: ignore[override]
        return [(_title(n), v) for n, v in self._pairs]

    def keys(self) -> list[str]:
        return [_title(n) for n, _ in self._pairs]

    def values(self) -> list[str]:
        return [v for _, v in self._pairs]


def _title(name: str) -> str:
    return "-".join(part.capitalize() for part in name.split("-"))


class EventQuery(dict):  # type: ignore[type-arg]
    """The decoded query as ``event.query``: a dict of each name's first value, as
    Werkzeug's ``MultiDict`` reads as a dict; ``getlist(name)`` gives every value."""

    def __init__(self, pairs: list[tuple[str, str]]) -> None:
        lists: dict[str, list[str]] = {}
        for name, value in pairs:
            lists.setdefault(name, []).append(value)
        super().__init__((name, values[0]) for name, values in lists.items())
        self._lists = lists

    def get(self, name: str, default: Any = None, type: Callable[[str], Any] | None = None) -> Any:  # type: ignore[override]
        if name not in self:
            return default
        if type is None:
            return self[name]
        try:
            return type(self[name])
        except ValueError:
            return default

    def getlist(self, name: str) -> list[str]:
        return list(self._lists.get(name, ()))


class Event:
    """What an OpenFaaS ``python3-http`` handler is given as ``event``."""

    __slots__ = ("body", "headers", "method", "query", "path")

    def __init__(self, req: Request) -> None:
        self.body: bytes = req.body
        self.headers = EventHeaders(req.headers.items())
        self.method: str = req.method
        self.query = EventQuery(parse_qsl(req.query, keep_blank_values=True))
        self.path: str = unquote(req.path)


class Context:
    """What an OpenFaaS ``python3-http`` handler is given as ``context``."""

    __slots__ = ("hostname",)

    def __init__(self) -> None:
        self.hostname = os.getenv("HOSTNAME", "localhost")


def adapt(handle: Callable[[Any, Any], Any], is_async: bool) -> Callable[[Request], Any]:
    """A plain handler calling ``handle(event, context)`` and turning what it returns into a
    Response (PROTOCOL.md §13); a result it cannot turn raises, which is answered ``500
    handler_error`` and logged (§8.3)."""
    if is_async:
        async def handle_async(req: Request) -> Response:
            return to_response(await handle(Event(req), Context()))

        return handle_async

    def handle_plain(req: Request) -> Response:
        return to_response(handle(Event(req), Context()))

    return handle_plain


def to_response(result: Any) -> Response:
    """The template's ``format_response``: see the module's documentation."""
    if result is None:
        return Response(b"", 200, content_type=HTML)
    if isinstance(result, Response):
        return result
    if isinstance(result, dict):
        status = result.get("statusCode", 200)
        if type(status) is not int or not 100 <= status <= 599:
            raise ValueError(f"openfaas: statusCode {status!r} is not an integer from 100 to 599")
        return _make(result.get("body", ""), status, result.get("headers"))
    if isinstance(result, tuple) and 2 <= len(result) <= 3:
        # Flask's (body, status), (body, headers), (body, status, headers).
        body, rest = result[0], list(result[1:])
        status = rest.pop(0) if type(rest[0]) is int else 200
        headers = rest.pop(0) if rest else None
        if rest or not 100 <= status <= 599:
            raise ValueError(f"openfaas: a tuple result is (body, status[, headers]) or (body, headers); got {result!r:.200}")
        return _make(body, status, headers)
    if isinstance(result, (str, bytes, list)):
        return _make(result, 200, None)
    raise TypeError(f"openfaas: a handler returned {type(result).__name__}; want a dict "
                    "(statusCode, body, headers), None, str, bytes, a list or a tuple")


def _make(body: Any, status: int, headers: Any) -> Response:
    fields = _fields(headers)
    content_type = None
    if isinstance(body, (dict, list)):
        # Flask's jsonify: sorted keys, ASCII, compact (not debug); the vectors want no "\n".
        data = json.dumps(body, sort_keys=True, separators=(",", ":")).encode()
        content_type = "application/json"
    elif isinstance(body, (bytes, bytearray)):
        data = bytes(body)  # the template would send str(b"...") here, which nobody wants
    else:
        data = str(body).encode()
    if not any(name.lower() == "content-type" for name, _ in fields):
        fields.append(("Content-Type", content_type or HTML))
    return Response(data, status, fields)


def _fields(headers: Any) -> list[tuple[str, str]]:
    if headers is None:
        return []
    pairs = headers.items() if isinstance(headers, dict) else headers
    try:
        return [(str(name), value if isinstance(value, str) else str(value)) for name, value in pairs]
    except (TypeError, ValueError):
        raise TypeError(f"openfaas: headers {headers!r:.200} are neither a dict nor a list of pairs") from None
