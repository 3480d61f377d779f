"""Typed handlers: a parameter annotated with a dataclass or a pydantic model gets the
request's JSON body decoded into that type (PROTOCOL.md §8.1, §8.2: undecodable input is
``400 bad_request`` whose message names the offending field)::

    @dataclass
    class Item:
        name: str
        price: float

    @dataclass
    class Order:
        items: list[Item]
        note: str | None = None

    def quote(order: Order) -> Quote:      # or (order: Order, req: Request)
        ...

The decoding of dataclasses is this module's own (no dependency): JSON objects into
dataclasses (nested), ``list[X]``, ``tuple[...]``, ``set[X]``, ``dict[str, X]``,
``Optional[X]`` / ``X | None``, unions, ``Literal``, enums, ``int``, ``float`` (an integer
too), ``str``, ``bool``, ``Any``. It is strict, as Jackson's default is for Java's
``serveJson``: no coercion (``"3"`` is not an int), a missing field without a default and
an **unknown field are rejected**, so that a misspelt field is an error the client sees
rather than a default the handler silently uses. A pydantic model (pydantic 2, when it is
installed; it is not a dependency) is validated by pydantic, with its own rules and
configuration (``extra``, aliases, coercion).

The message names the field path and the types (``items[2].price: expected float, got
str``) but never quotes a value of the input, nor an exception's message (§8.1): a
validator's or a ``__post_init__``'s error is reported as ``invalid value``, and a key that
does not look like a field name (a short identifier) as ``[…]``.

Everything here is imported only for a handler that has such an annotation: a plain handler
costs one look at its ``__annotations__``.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import inspect
import json
import types
import typing

from ._errors import BAD_REQUEST, error_body
from ._handler import is_async_callable, looks_typed
from ._request import Request
from ._response import Response

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

_NoneType = type(None)


def typed_handler(handler: Callable[..., Any]) -> Callable[..., Any]:
    """handler itself when it takes the Request; else a handler that decodes the body into
    the parameter annotated with a dataclass or pydantic model. Raises TypeError at once
    (before the worker is ready) for a signature it cannot serve."""
    if not looks_typed(handler):
        return handler
    call = handler if inspect.isroutine(handler) or isinstance(handler, functools.partial) else handler.__call__
    hints = _hints(call)
    sig = inspect.signature(handler)
    kinds: list[tuple[str, Any]] = []  # ("request", None) or ("body", type), per parameter
    body_type: Any = None
    for p in sig.parameters.values():
        tp = hints.get(p.name, p.annotation)
        if tp is Request or p.annotation is inspect.Parameter.empty and not kinds:
            kinds.append(("request", None))
        elif _is_model(tp):
            if body_type is not None:
                raise TypeError(f"afterburn: handler {_qualname(handler)} has two body parameters "
                                f"({body_type.__name__} and {tp.__name__}); a request has one body")
            _check(tp, set())
            body_type = tp
            kinds.append(("body", tp))
        else:
            raise TypeError(f"afterburn: handler {_qualname(handler)}: parameter {p.name!r} is annotated "
                            f"{tp!r}; want Request, a dataclass or a pydantic model")
        if p.kind not in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            raise TypeError(f"afterburn: handler {_qualname(handler)}: parameter {p.name!r} must be positional")
    if body_type is None:
        return handler

    def arguments(req: Request) -> list[Any] | Response:
        value = decode(req, body_type)
        if isinstance(value, Response):
            return value
        return [req if kind == "request" else value for kind, _ in kinds]

    if is_async_callable(handler):
        async def typed_async(req: Request) -> Any:
            args = arguments(req)
            return args if isinstance(args, Response) else await handler(*args)

        return typed_async

    def typed(req: Request) -> Any:
        args = arguments(req)
        return args if isinstance(args, Response) else handler(*args)

    return typed


def decode(req: Request, tp: Any) -> Any:
    """The request body as a ``tp``, or the 400 Response that says why it is not one."""
    body = req.body
    try:
        data = json.loads(body)
    except json.JSONDecodeError as e:
        # e.msg is json's own wording ("Expecting value"), never the input.
        where = "the body is empty" if not body.strip() else f"line {e.lineno}, column {e.colno}: {e.msg}"
        return bad_input(req, tp, where)
    except UnicodeDecodeError:
        return bad_input(req, tp, "the body is not UTF-8")
    if _is_pydantic(tp):
        return _pydantic(req, tp, data)
    try:
        return _convert(data, tp, "")
    except _Invalid as e:
        return bad_input(req, tp, str(e))


def bad_input(req: Request, tp: Any, detail: str) -> Response:
    """PROTOCOL.md §8.1, §8.2: 400 bad_request, the message naming the field or position."""
    message = f"the request body is not valid JSON for {tp.__name__}: {detail}"
    return Response(error_body(BAD_REQUEST, req.request_id, message), 400,
                    [("AfterBurn-Error", BAD_REQUEST)], content_type="application/json")


# -- dataclasses ------------------------------------------------------------------------------


class _Invalid(Exception):
    """Input that does not fit the type; the message is ``path: what``."""

    def __init__(self, path: str, what: str) -> None:
        super().__init__(f"{path}: {what}" if path else what)


def _got(value: Any) -> str:
    return "null" if value is None else type(value).__name__


def _name(tp: Any) -> str:
    if tp is _NoneType:
        return "null"
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        return " or ".join(_name(a) for a in typing.get_args(tp))
    if origin is typing.Literal:
        return "one of " + ", ".join(json.dumps(a) for a in typing.get_args(tp))
    if origin is not None:
        return getattr(origin, "__name__", str(origin))
    return getattr(tp, "__name__", str(tp))


def _at(path: str, key: str | int) -> str:
    """The path of a list item or an object member. A key is the client's input: it is named
    only when it looks like a field name (a short identifier), else it is ``[…]``."""
    if isinstance(key, int):
        return f"{path}[{key}]"
    if key.isidentifier() and key.isascii() and len(key) <= 64:
        return f"{path}.{key}" if path else key
    return f"{path}[…]"


def _convert(value: Any, tp: Any, path: str) -> Any:
    if tp is typing.Any or tp is object:
        return value
    if tp is _NoneType or tp is None:
        if value is None:
            return None
        raise _Invalid(path, f"expected null, got {_got(value)}")
    origin = typing.get_origin(tp)
    if origin is not None:
        return _convert_generic(value, tp, origin, path)
    if tp is bool:
        if type(value) is bool:
            return value
    elif tp is int:
        if type(value) is int:
            return value
    elif tp is float:
        if type(value) in (int, float):
            return float(value)
    elif tp is str:
        if type(value) is str:
            return value
    elif isinstance(tp, type) and issubclass(tp, enum.Enum):
        try:
            return tp(value)
        except (ValueError, TypeError):
            raise _Invalid(path, f"expected one of {', '.join(json.dumps(m.value) for m in tp)}") from None
    elif dataclasses.is_dataclass(tp):
        return _convert_dataclass(value, tp, path)
    elif tp in (list, dict, tuple, set, frozenset):
        return _convert_generic(value, tp, tp, path)
    raise _Invalid(path, f"expected {_name(tp)}, got {_got(value)}")


def _convert_generic(value: Any, tp: Any, origin: Any, path: str) -> Any:
    args = typing.get_args(tp)
    if origin in (typing.Union, types.UnionType):
        if value is None and _NoneType in args:
            return None
        arms = [a for a in args if a is not _NoneType]
        if len(arms) == 1:
            return _convert(value, arms[0], path)
        for arm in arms:
            try:
                return _convert(value, arm, path)
            except _Invalid:
                continue
        raise _Invalid(path, f"expected {_name(tp)}, got {_got(value)}")
    if origin is typing.Literal:
        for a in args:
            if value == a and type(value) is type(a):
                return value
        raise _Invalid(path, f"expected {_name(tp)}")
    if origin in (list, tuple, set, frozenset):
        if type(value) is not list:
            raise _Invalid(path, f"expected {_name(tp)}, got {_got(value)}")
        if origin is tuple and args and not (len(args) == 2 and args[1] is Ellipsis):
            if len(value) != len(args):
                raise _Invalid(path, f"expected {len(args)} items, got {len(value)}")
            return tuple(_convert(v, a, _at(path, i)) for i, (v, a) in enumerate(zip(value, args)))
        item = args[0] if args else typing.Any
        items = [_convert(v, item, _at(path, i)) for i, v in enumerate(value)]
        return items if origin is list else origin(items)
    if origin is dict:
        if type(value) is not dict:
            raise _Invalid(path, f"expected dict, got {_got(value)}")
        item = args[1] if len(args) == 2 else typing.Any
        return {k: _convert(v, item, _at(path, k)) for k, v in value.items()}
    raise _Invalid(path, f"expected {_name(tp)}, got {_got(value)}")


def _convert_dataclass(value: Any, cls: Any, path: str) -> Any:
    if type(value) is not dict:
        raise _Invalid(path, f"expected {cls.__name__}, got {_got(value)}")
    fields = {f.name: f for f in dataclasses.fields(cls) if f.init}
    for key in value:
        if key not in fields:
            raise _Invalid(_at(path, key), f"unknown field of {cls.__name__}")
    hints = _hints(cls)
    kwargs = {}
    for name, f in fields.items():
        if name in value:
            kwargs[name] = _convert(value[name], hints.get(name, typing.Any), _at(path, name))
        elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            raise _Invalid(_at(path, name), "missing")
    try:
        return cls(**kwargs)
    except (ValueError, TypeError):
        # The class's own check (__post_init__): its message may quote the input (§8.1).
        raise _Invalid(path, f"invalid value for {cls.__name__}") from None


def _check(tp: Any, seen: set[Any]) -> None:
    """Refuses, before the worker is ready, a body type that _convert cannot decode."""
    if tp in seen or tp in (typing.Any, object, _NoneType, None, bool, int, float, str, list, dict, tuple, set,
                            frozenset):
        return
    if _is_pydantic(tp):
        return
    origin = typing.get_origin(tp)
    if origin is typing.Literal:
        return
    if origin is not None:
        if origin not in (typing.Union, types.UnionType, list, tuple, set, frozenset, dict):
            raise TypeError(f"afterburn: typed handlers cannot decode {tp!r}")
        args = typing.get_args(tp)
        if origin is dict and args and args[0] is not str:
            raise TypeError(f"afterburn: typed handlers decode dicts with str keys only, not {tp!r}")
        for a in args[1:] if origin is dict else args:
            if a is not Ellipsis:
                _check(a, seen)
        return
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return
    if dataclasses.is_dataclass(tp):
        seen.add(tp)
        for a in _hints(tp).values():
            _check(a, seen)
        return
    raise TypeError(f"afterburn: typed handlers cannot decode {tp!r}")


def _hints(obj: Any) -> dict[str, Any]:
    try:
        return typing.get_type_hints(obj)
    except NameError as e:
        raise TypeError(f"afterburn: cannot resolve the annotations of {_qualname(obj)}: {e}") from None


def _qualname(obj: Any) -> str:
    return getattr(obj, "__qualname__", None) or type(obj).__qualname__


def _is_model(tp: Any) -> bool:
    return isinstance(tp, type) and (dataclasses.is_dataclass(tp) or _is_pydantic(tp))


# -- pydantic (optional) ----------------------------------------------------------------------


def _is_pydantic(tp: Any) -> bool:
    return isinstance(tp, type) and hasattr(tp, "model_validate") and hasattr(tp, "model_fields")


# Error types whose message is user code's (a validator's), which may quote the input.
_USER_ERRORS = {"value_error", "assertion_error"}


def _pydantic(req: Request, tp: Any, data: Any) -> Any:
    from pydantic import ValidationError

    try:
        return tp.model_validate(data)
    except ValidationError as e:
        errors = e.errors(include_url=False, include_input=False, include_context=False)
        first = errors[0]
        path = ""
        for key in first.get("loc", ()):
            path = _at(path, key)
        what = "invalid value" if first.get("type") in _USER_ERRORS else first.get("msg", "invalid value")
        more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
        return bad_input(req, tp, f"{path}: {what}{more}" if path else f"{what}{more}")
