"""Handler shapes (PROTOCOL.md §13): handlers written for another platform, served as they
are. ``adapt(shape, handler)`` makes a plain handler (``handler(req) -> Response``) of one:

- ``"openfaas"``: OpenFaaS classic ``python3-http``, ``handle(event, context)`` (_openfaas);
- ``"lambda"``: AWS Lambda's HTTP event, payload 2.0, ``handler(event, context)`` (_lambda);
- ``"cloudevents"``: CloudEvents over HTTP, ``handle(cloud_event)`` (_cloudevents; needs
  the CloudEvents SDK, the ``cloudevents`` extra).

The adapter is part of the handler as far as the protocol goes: a result it cannot turn into
a response raises, which the exchange answers ``500 handler_error`` and logs (§8.3), and the
worker serves on; a request that does not make the platform's event is answered ``400
bad_request`` (§8.2). An ``async def`` handler stays one.
"""

from __future__ import annotations

from . import _cloudevents, _lambda, _openfaas
from ._handler import is_async_callable

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

SHAPES = {"openfaas": _openfaas.adapt, "lambda": _lambda.adapt, "cloudevents": _cloudevents.adapt}


def adapt(shape: str, handler: Callable[..., Any]) -> Callable[..., Any]:
    """The plain handler that serves ``handler``, written in ``shape``; ValueError for a
    shape there is not, ImportError for CloudEvents without the SDK."""
    make = SHAPES.get(shape)
    if make is None:
        raise ValueError(f"afterburn: unknown handler shape {shape!r}; want one of {', '.join(SHAPES)}")
    if not callable(handler):
        raise TypeError(f"afterburn: a {shape} handler must be callable, not {type(handler).__name__}")
    return make(handler, is_async_callable(handler))
