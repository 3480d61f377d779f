"""The launcher's guess of what it serves, and its usage errors."""

from __future__ import annotations

import subprocess
import sys

import fastapi_app
import flask_app
import pytest
from workers import SRC

from afterburn_runtime.__main__ import _kind
from afterburn_runtime._handler import is_async_callable


def plain(req):
    return "x"


async def plain_async(req):
    return "x"


def wsgi(environ, start_response):
    return []


async def asgi(scope, receive, send):
    pass


class AsgiCallable:
    async def __call__(self, scope, receive, send):
        pass


@pytest.mark.parametrize(("obj", "kind"), [
    (plain, "plain"), (plain_async, "plain"), (wsgi, "wsgi"), (asgi, "asgi"), (AsgiCallable(), "asgi"),
    (flask_app.app, "wsgi"), (fastapi_app.app, "asgi"),
])
def test_kind(obj, kind: str) -> None:
    assert _kind(obj) == kind


def test_is_async_callable() -> None:
    import functools

    assert is_async_callable(plain_async) and is_async_callable(AsgiCallable())
    assert is_async_callable(functools.partial(plain_async))
    assert not is_async_callable(plain) and not is_async_callable(wsgi)


@pytest.mark.parametrize("args", [[], ["nocolon"], ["--bogus", "m:a"], ["--keep-underscore-headers"],
                                  ["--wsgi", "--asgi", "m:a"]])
def test_usage_errors_exit_2(args: list[str]) -> None:
    proc = subprocess.run([sys.executable, "-m", "afterburn_runtime", *args], env={"PYTHONPATH": str(SRC)},
                          capture_output=True, text=True, timeout=30)
    assert proc.returncode == 2
    assert "usage: python -m afterburn_runtime" in proc.stderr
