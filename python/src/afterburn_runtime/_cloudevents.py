"""CloudEvents 1.0 over HTTP (PROTOCOL.md §13, ``cloudevents``)::

    def hello(cloud_event):
        print(f"Received event with ID: {cloud_event['id']} and data {cloud_event.data}")

The handler is given the event as the CloudEvents SDK's dict-like ``CloudEvent`` (the one
Google's functions-framework hands, so such handlers run unchanged): ``event["type"]``,
``event.get("subject")``, ``event.data``. It needs the SDK, ``pip install
'afterburn-runtime[cloudevents]'``: ``cloudevents.v1.http`` of SDK 2, else
``cloudevents.http`` of SDK 1. Held to ``conformance/shapes/cloudevents.json``:

- In: binary mode (a ``ce-specversion`` field: attributes from the ``ce-*`` fields,
  percent-decoded, ``datacontenttype`` from ``Content-Type``) or structured mode (a
  ``application/cloudevents+json`` body). ``data`` is decoded by its content type: JSON
  types parsed, ``text/*`` a string, anything else bytes (structured ``data_base64`` too).
  A request that is neither, a ``specversion`` other than ``1.0``, a missing or empty
  ``id``, ``source`` or ``type``, an attribute name that is not lower-case letters and
  digits, or data that does not decode as its type is not an event: ``400 bad_request``
  (§8.2). Batch mode is not read (400 too). No attribute is invented: an event sent
  without ``time`` has none (the SDK's constructor would add one; it is taken out).
- Out: a CloudEvent (the SDK's, version 1 or 2 API: anything with ``get_attributes()``
  and ``get_data()``) is written in binary mode, ``200``: ``ce-*`` fields, ``Content-Type``
  from ``datacontenttype``, the data as the body (bytes as they are, a string as UTF-8,
  anything else compact JSON, ``application/json`` when no type is given). ``None`` is
  ``204``; anything else is a plain result, as a plain handler's (a :class:`Response`,
  ``str``, ``bytes``, a ``dict``...).

Why not the SDK's ``from_http``/``to_binary``: ``from_http`` makes up an ``id`` when the
request has none (so a request that is not an event passes), parses every binary body as
JSON whatever its type (text ``"123"`` becomes a number, text that is not JSON stays
bytes), reads any request without ``ce-specversion`` as structured, and ``to_binary``
writes JSON with spaces; the two SDK majors also spell them differently. The binding is a
page of this module; the SDK's event class is what handlers know.
"""

from __future__ import annotations

import base64
import binascii
import datetime
import json
from urllib.parse import quote, unquote

from ._errors import BAD_REQUEST, error_body
from ._request import Request
from ._response import Response, to_response as plain_response

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

EXTRA = "pip install 'afterburn-runtime[cloudevents]'"
REQUIRED = ("id", "source", "type")
STRUCTURED = "application/cloudevents+json"


class NotAnEvent(Exception):
    """The request does not make a CloudEvent: the client's fault, 400 (§13)."""


def event_class() -> Any:
    """The SDK's dict-like CloudEvent class, or ImportError naming the extra."""
    try:
        from cloudevents.v1.http import CloudEvent  # SDK 2: the version 1 API, kept as is
    except ImportError:
        try:
            from cloudevents.http import CloudEvent  # SDK 1
        except ImportError:
            raise ImportError("afterburn: CloudEvents handlers need the CloudEvents SDK: " + EXTRA) from None
    return CloudEvent


def _media(content_type: str | None) -> str:
    return (content_type or "").split(";", 1)[0].strip().lower()


def _is_json(media: str) -> bool:
    return media == "application/json" or media.endswith("+json") or media == "text/json"


def _charset(content_type: str) -> str:
    for param in content_type.split(";")[1:]:
        name, _, value = param.partition("=")
        if name.strip().lower() == "charset":
            return value.strip().strip('"') or "utf-8"
    return "utf-8"


def _decode(body: bytes, content_type: str | None) -> Any:
    """Binary-mode data by its content type: JSON parsed, text a string, else bytes."""
    if not body:
        return None
    media = _media(content_type)
    try:
        if _is_json(media):
            return json.loads(body)
        if media.startswith("text/"):
            return body.decode(_charset(content_type or ""))
    except (ValueError, LookupError):
        raise NotAnEvent(f"the data is not {media}") from None
    return body


def read(req: Request) -> tuple[dict[str, Any], Any]:
    """The attributes and data of the CloudEvent ``req`` carries, or NotAnEvent."""
    content_type = req.headers.get("content-type")
    if "ce-specversion" in req.headers:
        attributes: dict[str, Any] = {}
        for name, value in req.headers:
            if name.startswith("ce-") and name[3:] not in attributes:
                attributes[name[3:]] = unquote(value)
        if content_type is not None:
            attributes["datacontenttype"] = content_type
        data = _decode(req.body, content_type)
    elif _media(content_type) == STRUCTURED:
        try:
            doc = json.loads(req.body)
        except ValueError:
            raise NotAnEvent("the structured-mode body is not JSON") from None
        if not isinstance(doc, dict):
            raise NotAnEvent("the structured-mode body is not a JSON object")
        if "data" in doc and "data_base64" in doc:
            raise NotAnEvent("the event has both data and data_base64")
        attributes = {k: v for k, v in doc.items() if k not in ("data", "data_base64")}
        data = doc.get("data")
        if doc.get("data_base64") is not None:
            try:
                data = base64.b64decode(doc["data_base64"], validate=True)
            except (binascii.Error, ValueError, TypeError):
                raise NotAnEvent("data_base64 is not base64") from None
    else:
        raise NotAnEvent("neither a ce-specversion field (binary mode) nor an application/cloudevents+json body "
                         "(structured mode)")
    if attributes.get("specversion") != "1.0":
        raise NotAnEvent(f"specversion {attributes.get('specversion')!r} is not 1.0")
    for name in REQUIRED:
        if not isinstance(attributes.get(name), str) or not attributes[name]:
            raise NotAnEvent(f"the required attribute {name!r} is missing or empty")
    for name in attributes:
        if not (name.isascii() and name.isalnum() and name == name.lower()):
            raise NotAnEvent(f"attribute name {name!r} is not lower-case letters and digits")
    return attributes, data


def adapt(handler: Callable[[Any], Any], is_async: bool) -> Callable[[Request], Any]:
    """A plain handler calling ``handler(cloud_event)`` (PROTOCOL.md §13). Raises
    ImportError now, before the worker is ready, without the SDK."""
    cls = event_class()

    def make(req: Request) -> Any:
        attributes, data = read(req)
        ev = cls(attributes, data)
        if "time" not in attributes:
            del ev["time"]  # the SDK's constructor stamps one; the sender sent none
        return ev

    if is_async:
        async def handle_async(req: Request) -> Response:
            try:
                ev = make(req)
            except NotAnEvent as e:
                return bad_event(req, e)
            return to_response(await handler(ev))

        return handle_async

    def handle_plain(req: Request) -> Response:
        try:
            ev = make(req)
        except NotAnEvent as e:
            return bad_event(req, e)
        return to_response(handler(ev))

    return handle_plain


def bad_event(req: Request, e: NotAnEvent) -> Response:
    """PROTOCOL.md §13, §8.1: 400 bad_request; what is wrong goes to the log only."""
    req.log(f"afterburn: {req.method} {req.path} is not a CloudEvent: {e}")
    return Response(error_body(BAD_REQUEST, req.request_id), 400, [("AfterBurn-Error", BAD_REQUEST)],
                    content_type="application/json")


def to_response(result: Any) -> Response:
    """A CloudEvent in binary mode, None as 204, anything else as a plain handler's result."""
    if result is None:
        return Response(b"", 204)
    if not (hasattr(result, "get_attributes") and hasattr(result, "get_data")):
        return plain_response(result)
    fields: list[tuple[str, str]] = []
    content_type = None
    for name, value in dict(result.get_attributes()).items():
        if value is None:
            continue
        if name == "datacontenttype":
            content_type = str(value)
            continue
        fields.append((f"ce-{name}", _header_value(value)))
    data = result.get_data()
    if data is None:
        body = b""
    elif isinstance(data, (bytes, bytearray, memoryview)):
        body = bytes(data)
    elif isinstance(data, str):
        body = data.encode()
    else:
        body = json.dumps(data, separators=(",", ":"), ensure_ascii=False).encode()
        content_type = content_type or "application/json"
    if content_type is not None:
        fields.append(("Content-Type", content_type))
    return Response(body, 200, fields)


def _header_value(value: Any) -> str:
    """An attribute's canonical string (the JSON format's), percent-encoded as the HTTP
    binding asks: space, '"', '%' and everything outside printable ASCII."""
    if isinstance(value, bool):
        text = "true" if value else "false"
    elif isinstance(value, datetime.datetime):
        text = value.isoformat().replace("+00:00", "Z")
    elif isinstance(value, (bytes, bytearray)):
        text = base64.b64encode(value).decode("ascii")
    else:
        text = str(value)
    return quote(text, safe="!#$&'()*+,-./:;<=>?@[\\]^_`{|}~")
