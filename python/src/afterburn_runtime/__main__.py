"""The launcher: ``python -m afterburn_runtime [--plain|--wsgi|--asgi] [--keep-underscore-headers] [--max-lanes N] module:attr``.

It protects the protocol (PROTOCOL.md §2.4) before it imports user code, so import-time
banners and prints from C extensions go to the logs, then imports ``module``, takes
``attr`` and serves it. Without ``--wsgi``/``--asgi`` the kind is guessed: an object with
an ``async def __call__(scope, receive, send)`` is ASGI, a callable taking
``(environ, start_response)`` is WSGI, anything else a plain handler. An import that
raises is an initialisation failure: the traceback goes to stderr and the process exits 1
(§9.1).

``--keep-underscore-headers`` is ``serve_wsgi(app, keep_underscore_headers=True)``: a WSGI
app then also sees request fields whose names hold ``_`` (§5.5). Plain handlers and ASGI
apps always see them, under their own names, so there it changes nothing.

``--max-lanes N`` is ``serve(..., max_lanes=N)``: the most requests the worker carries at
once when the watchdog gives it lanes (PROTOCOL.md §2.5; default AFTERBURN_PY_MAX_LANES,
else 32 for plain handlers and WSGI apps, 1024 for async handlers and ASGI apps).
"""

from __future__ import annotations

import os
import sys

from ._fds import EnvError, protocol_fds

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

USAGE = ("usage: python -m afterburn_runtime [--plain|--wsgi|--asgi] [--keep-underscore-headers] "
         "[--max-lanes N] module:attr")


def _kind(obj: object) -> str:
    from ._handler import is_async_callable, looks_typed

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
    args = list(argv)
    while args and args[0].startswith("--"):
        option = args.pop(0)
        if option in ("--plain", "--wsgi", "--asgi") and kind is None:
            kind = option[2:]
        elif option == "--keep-underscore-headers":
            keep_underscore_headers = True
        elif option == "--max-lanes" and args and args[0].isdigit() and args[0].isascii() and int(args[0]) >= 1:
            max_lanes = int(args.pop(0))
        else:
            print(USAGE, file=sys.stderr)
            raise SystemExit(2)
    if len(args) != 1 or ":" not in args[0]:
        print(USAGE, file=sys.stderr)
        raise SystemExit(2)
    module_name, _, attr = args[0].partition(":")
    try:
        protocol_fds()  # §2.4: before any user code runs
    except EnvError as e:
        os.write(2, f"{e}\n".encode())
        raise SystemExit(2) from None
    # Import the user's module as `python -m` would find it: from the current directory.
    if "" not in sys.path and os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    import importlib

    module = importlib.import_module(module_name)
    obj: Any = module
    for part in attr.split("."):
        obj = getattr(obj, part)
    if kind is None:
        kind = _kind(obj)
    import afterburn_runtime as ab

    if kind == "asgi":
        ab.serve_asgi(obj, max_lanes=max_lanes)
    elif kind == "wsgi":
        ab.serve_wsgi(obj, keep_underscore_headers=keep_underscore_headers, max_lanes=max_lanes)
    else:
        ab.serve(obj, max_lanes=max_lanes)


if __name__ == "__main__":
    main(sys.argv[1:])
