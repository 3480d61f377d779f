"""WSGI and ASGI adapters: a real Flask app and a real FastAPI app, unchanged, in-process
with the test helper and under the real watchdog."""

from __future__ import annotations

import http.client
import json
import os
import subprocess
import sys
import threading
import time

import fastapi_app
import flask_app
import pytest
from workers import HERE, SRC

from afterburn_runtime.testing import call_asgi, call_wsgi

WATCHDOG = HERE.parents[1] / "go" / "bin" / "afterburn-watchdog"


# -- in-process ----------------------------------------------------------------------------


def test_flask_in_process() -> None:
    resp = call_wsgi(flask_app.app, "GET", "/hello")
    assert (resp.status, resp.body) == (200, b"hello from flask")
    assert resp.headers.get("content-length") == "16"
    resp = call_wsgi(flask_app.app, "POST", "/echo?a=1&a=2", body=b'{"x": 1}',
                     headers=[("Content-Type", "application/json"), ("Accept", "a"), ("Accept", "b")],
                     request_id="rid-f")
    assert resp.json() == {"body": '{"x": 1}', "json": {"x": 1}, "content_type": "application/json",
                           "accept": ["a, b"], "args": {"a": ["1", "2"]}, "path": "/echo", "request_id": "rid-f"}


def test_flask_streams_chunked_and_keeps_cookies() -> None:
    resp = call_wsgi(flask_app.app, "GET", "/stream")
    assert (resp.chunked, resp.body) == (True, b"line 0\nline 1\nline 2\n")
    resp = call_wsgi(flask_app.app, "GET", "/cookies")
    assert [v.split(";")[0] for v in resp.headers.get_all("set-cookie")] == ["a=1", "b=2"]


def test_flask_errors_are_flasks_own() -> None:
    # Flask turns the exception into its own 500 page: the app's behaviour, unchanged.
    assert call_wsgi(flask_app.app, "GET", "/boom").status == 500
    assert call_wsgi(flask_app.app, "GET", "/missing-on-purpose").status == 404
    assert call_wsgi(flask_app.app, "HEAD", "/hello").body == b""


def test_fastapi_in_process() -> None:
    resp = call_asgi(fastapi_app.app, "GET", "/hello")
    assert (resp.status, resp.body) == (200, b"hello from fastapi")
    resp = call_asgi(fastapi_app.app, "POST", "/raw", body=b"12345", headers=[("X-Rep", "1"), ("X-Rep", "2")])
    assert resp.json() == {"len": 5, "headers": ["1", "2"]}
    resp = call_asgi(fastapi_app.app, "GET", "/stream")
    assert (resp.chunked, resp.body) == (True, b"tick 0\ntick 1\ntick 2\n")
    resp = call_asgi(fastapi_app.app, "POST", "/items", body=b'{"name": "x"}',
                     headers=[("Content-Type", "application/json")])
    assert resp.status == 422  # FastAPI's own validation


def test_asgi_app_raising_before_its_response_is_a_handler_error(capfd) -> None:
    async def app(scope, receive, send):
        raise RuntimeError("asgi secret")

    resp = call_asgi(app, "GET", "/boom", request_id="rid-a")
    assert (resp.status, resp.json()["type"], resp.worker_exit) == (500, "handler_error", 0)
    assert b"asgi secret" not in resp.body
    assert "[rid-a] afterburn: exception serving GET /boom" in capfd.readouterr().err


def test_fastapi_error_page_then_raise_keeps_the_worker(capfd) -> None:
    # Starlette sends its own 500 and then re-raises: the response is complete, so the
    # exception is logged and the worker goes on.
    resp = call_asgi(fastapi_app.app, "GET", "/boom", request_id="rid-b")
    assert (resp.status, resp.body, resp.worker_exit) == (500, b"Internal Server Error", 0)
    assert "RuntimeError: fastapi secret" in capfd.readouterr().err


# -- under the real watchdog ----------------------------------------------------------------


class Watchdog:
    """The real watchdog on 127.0.0.1 with one worker running ``args``; ready once its log
    says where it listens and /_/ready answers 200 (the protocol's own signals)."""

    def __init__(self, args: list[str]) -> None:
        if not WATCHDOG.exists():
            pytest.fail(f"{WATCHDOG} is missing: build it with `make {WATCHDOG.relative_to(HERE.parents[1])}`")
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join([str(SRC), str(HERE / "apps")])
        self.proc = subprocess.Popen(
            [str(WATCHDOG), "-port", "0", "-metrics_port", "0", "-listen_host", "127.0.0.1", "-workers", "1", "-prefix_logs=false",
             "--", sys.executable, *args],
            env=env, stderr=subprocess.PIPE, text=True)
        self.lines: list[str] = []
        self.addr: str | None = None
        self._listening = threading.Event()
        threading.Thread(target=self._read_log, daemon=True).start()
        if not self._listening.wait(30):
            self.stop()
            pytest.fail("the watchdog never logged its address:\n" + "".join(self.lines))
        deadline = time.monotonic() + 30
        while self.get("/_/ready")[0] != 200:
            if time.monotonic() > deadline:
                self.stop()
                pytest.fail("the worker never became ready:\n" + "".join(self.lines))
            time.sleep(0.01)  # polling the watchdog's readiness signal, as the suite does

    def _read_log(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.lines.append(line)
            if self.addr is None and "listening on " in line:
                self.addr = line.split("listening on ", 1)[1].split()[0]
                self._listening.set()

    def request(self, method: str, path: str, body: bytes | None = None,
                headers: dict[str, str] | None = None) -> tuple[int, http.client.HTTPResponse, bytes]:
        assert self.addr is not None
        host, port = self.addr.rsplit(":", 1)
        conn = http.client.HTTPConnection(host, int(port), timeout=10)
        try:
            conn.request(method, path, body=body, headers=headers or {})
            resp = conn.getresponse()
            data = resp.read()
            return resp.status, resp, data
        finally:
            conn.close()

    def get(self, path: str) -> tuple[int, bytes]:
        status, _, data = self.request("GET", path)
        return status, data

    def stop(self) -> tuple[int, str]:
        self.proc.terminate()  # SIGTERM: graceful shutdown (§9.4)
        status = self.proc.wait(timeout=30)
        return status, "".join(self.lines)


@pytest.fixture
def flask_watchdog():
    wd = Watchdog(["-m", "afterburn_runtime", "flask_app:app"])  # detected as WSGI
    yield wd
    wd.stop()


@pytest.fixture
def fastapi_watchdog():
    wd = Watchdog(["-m", "afterburn_runtime", "--asgi", "fastapi_app:app"])
    yield wd
    wd.stop()


def test_flask_under_the_watchdog(flask_watchdog: Watchdog) -> None:
    assert flask_watchdog.get("/hello") == (200, b"hello from flask")
    status, resp, data = flask_watchdog.request("POST", "/echo?q=1", b'{"k": "v"}',
                                                {"Content-Type": "application/json", "X-Request-Id": "flask-1"})
    assert status == 200
    assert json.loads(data)["json"] == {"k": "v"}
    assert json.loads(data)["request_id"] == "flask-1" == resp.getheader("AfterBurn-Request-Id")
    status, resp, data = flask_watchdog.request("GET", "/stream")
    assert (status, data, resp.getheader("Transfer-Encoding")) == (200, b"line 0\nline 1\nline 2\n", "chunked")
    status, resp, _ = flask_watchdog.request("GET", "/cookies")
    assert len([v for k, v in resp.getheaders() if k.lower() == "set-cookie"]) == 2


def test_fastapi_under_the_watchdog(fastapi_watchdog: Watchdog) -> None:
    assert fastapi_watchdog.get("/hello") == (200, b"hello from fastapi")
    status, resp, data = fastapi_watchdog.request("POST", "/items", b'{"name": "pen", "price": 1.5}',
                                                  {"Content-Type": "application/json", "X-Request-Id": "fa-1"})
    assert status == 200, data
    # The lifespan ran once, before the worker became ready, and its state reaches requests.
    assert json.loads(data) == {"name": "pen", "price": 1.5, "startups": 1, "loaded": True, "request_id": "fa-1"}
    status, resp, data = fastapi_watchdog.request("GET", "/stream")
    assert (status, data, resp.getheader("Transfer-Encoding")) == (200, b"tick 0\ntick 1\ntick 2\n", "chunked")
    status, _, data = fastapi_watchdog.request("GET", "/boom")
    assert (status, data) == (500, b"Internal Server Error")  # FastAPI's own error page
    assert fastapi_watchdog.get("/hello")[0] == 200
    code, log = fastapi_watchdog.stop()
    assert "restart" not in log.lower()  # the worker kept serving
    assert code == 0
    assert "fastapi lifespan startup" in log
    assert "fastapi lifespan shutdown" in log  # shutdown on EOF (§9.4)
