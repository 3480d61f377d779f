"""The launcher's --json-dumps: an encoder that marks what it encodes, a handler whose
``Response.json`` goes through it, and a name that is not a function."""

from __future__ import annotations

import json

from afterburn_runtime import Response


def marked(obj) -> bytes:
    return json.dumps({"encoded_by": "launcher", "value": obj}).encode()  # bytes are allowed too


not_callable = {"encoded_by": "nobody"}


def listing(req) -> Response:
    return Response.json([req.path])
