"""The launcher's guess of what it serves, and its usage errors."""

from __future__ import annotations

import os
import subprocess
import sys

import fastapi_app
import flask_app
import pytest
from workers import HANDSHAKE, SRC, Worker

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


# -- --json-dumps module:attr: the application's JSON encoder -----------------------------------

QUOTE = b'{"items": [{"name": "a", "price": 2.5}]}'


def _post_quote(w, body: bytes = QUOTE):
    w.send(b"POST /quote HTTP/1.1\r\nHost: fn\r\nAfterBurn-Request-Id: rid-q\r\nContent-Length: %d\r\n\r\n%s"
           % (len(body), body))
    return w.response(timeout=10)


def test_json_dumps_encodes_a_typed_handlers_result_and_response_json() -> None:
    w = Worker(["-m", "afterburn_runtime", "--json-dumps", "encoder_app:marked", "typed_app:quote"])
    w.send(HANDSHAKE)
    assert w.response(timeout=30).status == 200
    assert _post_quote(w).json() == {"encoded_by": "launcher", "value": {"total": 2.5, "request_id": "rid-q"}}
    bad = _post_quote(w, b'{"items": [{"name": "a", "price": "x"}]}')
    assert (bad.status, bad.headers.get("afterburn-error")) == (400, "bad_request")
    assert "encoded_by" not in bad.json()  # the protocol's own error bodies stay json.dumps (§8.1)
    status, log = w.wait()
    assert status == 0, log
    w = Worker(["-m", "afterburn_runtime", "--plain", "--json-dumps", "encoder_app:marked", "encoder_app:listing"])
    w.send(HANDSHAKE + b"GET /list HTTP/1.1\r\nHost: fn\r\n\r\n")
    assert w.response(timeout=30).status == 200
    resp = w.response(timeout=10)
    assert (resp.json(), resp.headers.get("content-type")) == ({"encoded_by": "launcher", "value": ["/list"]},
                                                              "application/json")
    status, log = w.wait()
    assert status == 0, log


@pytest.mark.parametrize(("args", "message"), [
    (["--json-dumps", "no_such_encoder_module:dumps", "typed_app:quote"],
     "--json-dumps no_such_encoder_module:dumps: no module named 'no_such_encoder_module'"),
    (["--json-dumps", "json.no_such_part:dumps", "typed_app:quote"],
     "--json-dumps json.no_such_part:dumps: no module named 'json.no_such_part'"),
    (["--json-dumps", "encoder_app:no_such_name", "typed_app:quote"],
     "--json-dumps encoder_app:no_such_name: module 'encoder_app' has no attribute 'no_such_name'"),
    (["--json-dumps", "encoder_app:not_callable", "typed_app:quote"],
     "--json-dumps encoder_app:not_callable: not_callable is not callable (it is a dict)"),
    (["--json-dumps", "json.dumps", "typed_app:quote"],
     "--json-dumps wants module:attr (as orjson:dumps), got 'json.dumps'"),
    (["--json-dumps", "json:", "typed_app:quote"], "--json-dumps wants module:attr"),
    (["--json-dumps"], "usage: python -m afterburn_runtime"),
    (["--json-dumps", "json:dumps", "--json-dumps", "json:dumps", "typed_app:quote"],
     "usage: python -m afterburn_runtime"),
    (["--wsgi", "--json-dumps", "json:dumps", "wsgi_fixture:app"],
     "--json-dumps is for plain handlers; --wsgi serves an app that encodes its own JSON"),
    (["--json-dumps", "json:dumps", "asgi_fixture:app"],
     "--json-dumps is for plain handlers; asgi_fixture:app is served as ASGI"),
])
def test_a_bad_json_dumps_exits_2_naming_the_flag(args: list[str], message: str) -> None:
    w = Worker(["-m", "afterburn_runtime", *args], "fd")
    status, log = w.wait()
    assert status == 2, log
    assert message in log
    assert "Traceback" not in log


def test_an_encoder_module_that_fails_its_own_import_is_an_initialisation_failure(tmp_path) -> None:
    # A missing module the encoder's module imports is not the flag's fault: its traceback, exit 1 (§9.1).
    (tmp_path / "broken_encoder.py").write_text("import no_such_dependency_of_the_encoder\ndumps = repr\n")
    w = Worker(["-m", "afterburn_runtime", "--json-dumps", "broken_encoder:dumps", "typed_app:quote"], "fd",
               env={"PYTHONPATH": os.pathsep.join([str(tmp_path), str(SRC), str(SRC.parent / "tests" / "apps")])})
    status, log = w.wait()
    assert status == 1, log
    assert "ModuleNotFoundError: No module named 'no_such_dependency_of_the_encoder'" in log
