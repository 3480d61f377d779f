"""The launcher: ``python -m afterburn_runtime [--plain|--wsgi|--asgi|--openfaas|--lambda|--cloudevents] [--keep-underscore-headers] [--max-lanes N] [--json-dumps module:attr] module:attr``.

It protects the protocol (PROTOCOL.md §2.4) before it imports user code, so import-time
banners and prints from C extensions go to the logs, then imports ``module``, takes
``attr`` and serves it. Without ``--wsgi``/``--asgi`` the kind is guessed: an object with
an ``async def __call__(scope, receive, send)`` is ASGI, a callable taking
``(environ, start_response)`` is WSGI, anything else a plain handler. An import that
raises is an initialisation failure: the traceback goes to stderr and the process exits 1
(§9.1).

``--openfaas``, ``--lambda`` and ``--cloudevents`` serve a handler written for another
platform, unchanged: ``serve(obj, shape="openfaas")`` and so on (PROTOCOL.md §13). With
``--cloudevents`` and no CloudEvents SDK installed the worker ends at once, exit 2, with a
message naming the extra to install, before the app is imported.

``--keep-underscore-headers`` is ``serve_wsgi(app, keep_underscore_headers=True)``: a WSGI
app then also sees request fields whose names hold ``_`` (§5.5). Plain handlers and ASGI
apps always see them, under their own names, so there it changes nothing.

``--max-lanes N`` is ``serve(..., max_lanes=N)``: the most requests the worker carries at
once when the watchdog gives it lanes (PROTOCOL.md §2.5; default AFTERBURN_PY_MAX_LANES,
else 32 for plain handlers and WSGI apps, 1024 for async handlers and ASGI apps).

``--json-dumps module:attr`` is ``serve(..., json_dumps=module.attr)``: the function that
encodes every JSON body the library makes for a plain handler (``orjson:dumps``). It is
looked up after the protocol is protected and before the app is imported, so a typo ends
the worker at once, with exit 2 and a message naming the flag, not after a long model load.
A WSGI or ASGI app encodes its own JSON, so with one the flag is a usage error too.
"""

from __future__ import annotations

import os
import sys

from . import serve, serve_asgi, serve_wsgi
from ._fds import EnvError, protocol_fds
from ._handler import is_async_callable, looks_typed

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Callable, NoReturn

SHAPES = ("openfaas", "lambda", "cloudevents")  # PROTOCOL.md §13
USAGE = ("usage: python -m afterburn_runtime [--plain|--wsgi|--asgi|--openfaas|--lambda|--cloudevents] "
         "[--keep-underscore-headers] "
         "[--max-lanes N] [--json-dumps module:attr] module:attr")


def _fail(message: str) -> NoReturn:
    print(f"afterburn: {message}", file=sys.stderr)
    raise SystemExit(2)


def _usage_error(message: str | None = None) -> NoReturn:
    if message is not None:
        print(f"afterburn: {message}", file=sys.stderr)
    print(USAGE, file=sys.stderr)
    raise SystemExit(2)


def _is_target(value: str) -> bool:
    """Whether ``value`` has the ``module:attr`` shape (both parts present)."""
    module_name, colon, attr = value.partition(":")
    return bool(colon and module_name and attr)


def _attribute(obj: Any, attr: str) -> Any:
    """``obj.attr``; dots in ``attr`` go deeper (``module:app.handle``)."""
    for part in attr.split("."):
        obj = getattr(obj, part)
    return obj


def _encoder(target: str) -> Callable[[Any], str | bytes]:
    """The function ``--json-dumps module:attr`` names, or exit 2 saying what is wrong. An
    exception raised while its module runs is the module's own: it propagates (a traceback,
    exit 1), as when the app's import fails (PROTOCOL.md §9.1)."""
    import importlib

    module_name, _, attr = target.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as e:
        # Only the named module (or a package above it) missing is the flag's fault; a
        # module that is there but imports one that is not fails as the module's own.
        if e.name is None or not (module_name == e.name or module_name.startswith(e.name + ".")):
            raise
        _fail(f"--json-dumps {target}: no module named {e.name!r}")
    try:
        encoder = _attribute(module, attr)
    except AttributeError:
        _fail(f"--json-dumps {target}: module {module_name!r} has no attribute {attr!r}")
    if not callable(encoder):
        _fail(f"--json-dumps {target}: {attr} is not callable (it is a {type(encoder).__name__})")
    return encoder


def _kind(obj: object) -> str:
    if looks_typed(obj):
        return "plain"  # (order: Order, req: Request) is a typed handler, not WSGI's two

    fn = obj if hasattr(obj, "__code__") else getattr(obj, "__call__", None)
    code = getattr(fn, "__code__", None)
    if code is None:
        return "plain"
    params = code.co_argcount - (1 if hasattr(fn, "__self__") else 0)
    if is_async_callable(obj) and params == 3:
        return "asgi"
    if params == 2:
        return "wsgi"
    return "plain"


def main(argv: list[str]) -> None:
    kind = None
    keep_underscore_headers = False
    max_lanes = None
    json_dumps = None
    args = list(argv)
    while args and args[0].startswith("--"):
        option = args.pop(0)
        if option in ("--plain", "--wsgi", "--asgi", "--openfaas", "--lambda", "--cloudevents") and kind is None:
            kind = option[2:]
        elif option == "--keep-underscore-headers":
            keep_underscore_headers = True
        elif option == "--max-lanes" and args and args[0].isdigit() and args[0].isascii() and int(args[0]) >= 1:
            max_lanes = int(args.pop(0))
        elif option == "--json-dumps" and json_dumps is None and args:
            json_dumps = args.pop(0)
            if not _is_target(json_dumps):
                _usage_error(f"--json-dumps wants module:attr (as orjson:dumps), got {json_dumps!r}")
        else:
            _usage_error()
    if len(args) != 1 or ":" not in args[0]:
        _usage_error()
    if json_dumps is not None and kind in ("wsgi", "asgi"):
        _usage_error(f"--json-dumps is for plain handlers; --{kind} serves an app that encodes its own JSON")
    if json_dumps is not None and kind in SHAPES:
        _usage_error(f"--json-dumps is for plain handlers; a --{kind} handler's results are encoded as {kind} does")
    module_name, _, attr = args[0].partition(":")
    try:
        protocol_fds()  # §2.4: before any user code runs
    except EnvError as e:
        os.write(2, f"{e}\n".encode())
        raise SystemExit(2) from None
    # Import the user's modules as `python -m` would find them: from the current directory.
    if "" not in sys.path and os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    import importlib

    if kind == "cloudevents":
        try:
            importlib.import_module("cloudevents")
        except ImportError:
            _fail("--cloudevents needs the CloudEvents SDK: pip install 'afterburn-runtime[cloudevents]'")
    encoder = _encoder(json_dumps) if json_dumps is not None else None
    obj = _attribute(importlib.import_module(module_name), attr)
    if kind is None:
        kind = _kind(obj)
        if encoder is not None and kind != "plain":
            _fail(f"--json-dumps is for plain handlers; {args[0]} is served as {kind.upper()}, "
                  "an app that encodes its own JSON")
    if kind in SHAPES:
        serve(obj, max_lanes=max_lanes, shape=kind)
    elif kind == "asgi":
        serve_asgi(obj, max_lanes=max_lanes)
    elif kind == "wsgi":
        serve_wsgi(obj, keep_underscore_headers=keep_underscore_headers, max_lanes=max_lanes)
    else:
        serve(obj, max_lanes=max_lanes, json_dumps=encoder)


if __name__ == "__main__":
    main(sys.argv[1:])
