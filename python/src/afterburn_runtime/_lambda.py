"""AWS Lambda's HTTP event, payload format 2.0 (PROTOCOL.md §13, ``lambda-http``)::

    def lambda_handler(event, context):
        return {"statusCode": 200, "body": json.dumps({"path": event["rawPath"]})}

The request becomes the event a function URL or an API Gateway HTTP API hands a function,
and what the function returns becomes the response, as those services make it, held to
``conformance/shapes/lambda-http.json``:

- ``headers`` one lower-case name per field, repeated values joined with ``,``; ``cookies``
  the ``Cookie`` field split at ``;`` (and no ``cookie`` header); ``rawQueryString`` as
  sent and ``queryStringParameters`` decoded (repeated names joined with ``,``; absent
  without a query); ``requestContext`` with ``requestId`` the request's id (§5.1) and
  ``http.sourceIp`` the first ``X-Forwarded-For`` address, else ``127.0.0.1`` (the
  watchdog, the worker's only peer); ``body`` text for the types §13 lists, base64 with
  ``isBase64Encoded`` otherwise (and for text that is not UTF-8); absent without a body.
- A dict with ``statusCode`` is the response: ``headers`` (string values; numbers are
  made strings), ``cookies`` (each a ``Set-Cookie``), ``body`` (a string, base64-decoded
  when ``isBase64Encoded``). Any other result (a dict without ``statusCode``, a string, a
  list, a number, ``None``) is a 200 ``application/json`` body: the result as compact JSON.
  A result that breaks these rules (a ``statusCode`` that is not an integer from 100 to
  599, a body that is not a string, base64 that does not decode) is the handler's error.
- ``context`` is a Lambda context: ``aws_request_id`` the request id,
  ``get_remaining_time_in_millis()`` the time to the deadline (§5.2; 900,000, Lambda's
  longest timeout, without one), ``function_name``, ``function_version``,
  ``invoked_function_arn``, ``memory_limit_in_mb``, ``log_group_name``, ``log_stream_name``
  from the ``AWS_LAMBDA_*`` environment a Lambda function has, else defaults
  (``function_name`` ``$AFTERBURN_FUNCTION_NAME`` or ``function``); ``identity`` and
  ``client_context`` None.
"""

from __future__ import annotations

import base64
import binascii
import json
import os
import time
from urllib.parse import parse_qsl

from ._request import Request
from ._response import Response

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

NO_DEADLINE_MS = 900_000  # Lambda's longest timeout, for a request without a deadline

_TEXT_TYPES = ("application/json", "application/xml", "application/x-www-form-urlencoded",
               "application/javascript")


def is_text(content_type: str | None) -> bool:
    """PROTOCOL.md §13: whether a body of this Content-Type is passed as text."""
    if not content_type:
        return False
    media = content_type.split(";", 1)[0].strip().lower()
    return (media.startswith("text/") or media in _TEXT_TYPES
            or (media.startswith("application/") and media.endswith(("+json", "+xml"))))


def event(req: Request) -> dict[str, Any]:
    """The payload 2.0 event of ``req``."""
    headers: dict[str, str] = {}
    cookies: list[str] = []
    for name, value in req.headers:
        if name == "cookie":
            cookies += [c.strip() for c in value.split(";") if c.strip()]
        elif name in headers:
            headers[name] += "," + value
        else:
            headers[name] = value
    now = time.time()
    host = headers.get("host", "")
    forwarded = headers.get("x-forwarded-for", "").split(",")[0].strip()
    ev: dict[str, Any] = {
        "version": "2.0",
        "routeKey": "$default",
        "rawPath": req.path,
        "rawQueryString": req.query,
    }
    if cookies:
        ev["cookies"] = cookies
    ev["headers"] = headers
    if req.query:
        params: dict[str, str] = {}
        for name, value in parse_qsl(req.query, keep_blank_values=True):
            params[name] = params[name] + "," + value if name in params else value
        ev["queryStringParameters"] = params
    ev["requestContext"] = {
        "accountId": "anonymous",
        "apiId": "afterburn",
        "domainName": host,
        "domainPrefix": host.split(".", 1)[0],
        "http": {
            "method": req.method,
            "path": req.path,
            "protocol": req.http_version,
            "sourceIp": forwarded or "127.0.0.1",
            "userAgent": headers.get("user-agent", ""),
        },
        "requestId": req.request_id,
        "routeKey": "$default",
        "stage": "$default",
        "time": time.strftime("%d/%b/%Y:%H:%M:%S +0000", time.gmtime(now)),
        "timeEpoch": int(now * 1000),
    }
    body = req.body
    encoded = False
    if body:
        text = None
        if is_text(headers.get("content-type")):
            try:
                text = body.decode()
            except UnicodeDecodeError:
                pass  # not text after all: base64, so that no byte is lost
        if text is None:
            text = base64.b64encode(body).decode("ascii")
            encoded = True
        ev["body"] = text
    ev["isBase64Encoded"] = encoded
    return ev


class LambdaContext:
    """The context a Lambda function's handler is given (the Python runtime's names)."""

    def __init__(self, req: Request) -> None:
        env = os.environ
        self.aws_request_id = req.request_id
        self.function_name = env.get("AWS_LAMBDA_FUNCTION_NAME") or env.get("AFTERBURN_FUNCTION_NAME") or "function"
        self.function_version = env.get("AWS_LAMBDA_FUNCTION_VERSION", "$LATEST")
        self.invoked_function_arn = f"arn:aws:lambda:local:000000000000:function:{self.function_name}"
        self.memory_limit_in_mb = env.get("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "128")
        self.log_group_name = env.get("AWS_LAMBDA_LOG_GROUP_NAME", f"/aws/lambda/{self.function_name}")
        self.log_stream_name = env.get("AWS_LAMBDA_LOG_STREAM_NAME", f"afterburn/{os.getpid()}")
        self.identity = None
        self.client_context = None
        self._req = req

    def get_remaining_time_in_millis(self) -> int:
        left = self._req.time_remaining
        return NO_DEADLINE_MS if left is None else int(left * 1000)

    def __repr__(self) -> str:
        return f"<LambdaContext aws_request_id={self.aws_request_id!r}>"


def adapt(handler: Callable[[Any, Any], Any], is_async: bool) -> Callable[[Request], Any]:
    """A plain handler calling ``handler(event, context)`` (PROTOCOL.md §13); a result it
    cannot turn into a response raises: ``500 handler_error``, logged (§8.3)."""
    if is_async:
        async def handle_async(req: Request) -> Response:
            return to_response(await handler(event(req), LambdaContext(req)))

        return handle_async

    def handle_plain(req: Request) -> Response:
        return to_response(handler(event(req), LambdaContext(req)))

    return handle_plain


def _compact(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()


def to_response(result: Any) -> Response:
    """A function URL's reading of a payload 2.0 result: see the module's documentation."""
    if isinstance(result, Response):
        return result
    if not (isinstance(result, dict) and "statusCode" in result):
        return Response(_compact(result), 200, content_type="application/json")
    status = result["statusCode"]
    if type(status) is not int or not 100 <= status <= 599:
        raise ValueError(f"lambda: statusCode {status!r} is not an integer from 100 to 599")
    fields: list[tuple[str, str]] = []
    headers = result.get("headers") or {}
    if not isinstance(headers, dict):
        raise TypeError(f"lambda: headers is a {type(headers).__name__}, not an object")
    for name, value in headers.items():
        if isinstance(value, bool) or not isinstance(value, (str, int, float)):
            raise TypeError(f"lambda: the value of header {name!r} is a {type(value).__name__}, not a string")
        fields.append((name, str(value)))
    cookies = result.get("cookies") or []
    if not isinstance(cookies, list) or not all(isinstance(c, str) for c in cookies):
        raise TypeError("lambda: cookies is not a list of strings")
    fields += [("Set-Cookie", c) for c in cookies]
    body = result.get("body")
    if body is None:
        data = b""
    elif not isinstance(body, str):
        raise TypeError(f"lambda: body is a {type(body).__name__}, not a string")
    elif result.get("isBase64Encoded"):
        try:
            data = base64.b64decode(body, validate=True)
        except (binascii.Error, ValueError):
            raise ValueError("lambda: isBase64Encoded, but the body is not base64") from None
    else:
        data = body.encode()
    return Response(data, status, fields)
