"""Handler shapes end to end (PROTOCOL.md §13): handlers copied from each platform's own
template or documentation (tests/apps/shape_*.py, attributed there) run unchanged under the
real watchdog through the launcher's --openfaas, --lambda and --cloudevents, answering real
HTTP requests on 127.0.0.1."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest
from test_adapters import Watchdog
from workers import HERE, SRC


def _served(*args: str) -> Watchdog:
    return Watchdog(["-m", "afterburn_runtime", *args])


def _no_restart(wd: Watchdog) -> None:
    code, log = wd.stop()
    assert code == 0, log
    assert "restart" not in log.lower(), log  # the one worker served every request


def test_openfaas_template_handler() -> None:
    wd = _served("--openfaas", "shape_openfaas_hello:handle")
    try:
        status, resp, data = wd.request("GET", "/")
        assert (status, data) == (200, b"Hello from OpenFaaS!")
        assert resp.getheader("Content-Type") == "text/html; charset=utf-8"  # as Flask sends it
        assert wd.request("POST", "/any/path", b"ignored")[0] == 200
    finally:
        _no_restart(wd)


def test_openfaas_event_and_a_malformed_result() -> None:
    wd = _served("--openfaas", "shape_openfaas_echo:handle")
    try:
        status, resp, data = wd.request("PUT", "/items/a%20b?name=x", b"12345", {"Content-Type": "text/plain"})
        assert status == 201, data
        assert json.loads(data) == {"method": "PUT", "path": "/items/a b", "name": "x", "length": 5,
                                    "type": "text/plain", "host": True}
        assert (resp.getheader("X-Served-By"), resp.getheader("Content-Type")) == ("python3-http", "application/json")
        status, resp, data = wd.request("GET", "/fail", headers={"X-Request-Id": "e2e-fail"})
        assert (status, json.loads(data)["type"], resp.getheader("AfterBurn-Error")) == (500, "handler_error",
                                                                                         "handler_error")
        assert wd.request("GET", "/again")[0] == 201  # the worker was kept
    finally:
        code, log = wd.stop()
    assert "[e2e-fail] afterburn: exception serving GET /fail" in log
    assert "statusCode 'not a number'" in log
    assert "restart" not in log.lower()


def test_lambda_sam_hello_world() -> None:
    wd = _served("--lambda", "shape_lambda_sam_hello:lambda_handler")
    try:
        status, _, data = wd.request("GET", "/hello?x=1", headers={"Cookie": "a=1"})
        assert (status, json.loads(data)) == (200, {"message": "hello world"})
    finally:
        _no_restart(wd)


def test_lambda_context_from_the_docs() -> None:
    # The handler sleeps 1 s, then prints the time left: the watchdog's default exec_timeout
    # is 10 s, so between 8 and 9 s are left (PROTOCOL.md §5.2).
    wd = _served("--lambda", "shape_lambda_context:lambda_handler")
    try:
        status, resp, data = wd.request("POST", "/ctx", b"{}", {"X-Request-Id": "e2e-ctx",
                                                                "Content-Type": "application/json"})
        assert (status, data, resp.getheader("Content-Type")) == (200, b"null", "application/json")
    finally:
        code, log = wd.stop()
    assert code == 0, log
    assert "Lambda Request ID: e2e-ctx" in log, log
    assert "Lambda function ARN: arn:aws:lambda:" in log
    left = re.search(r"Lambda time remaining in MS: (\d+)", log)
    assert left is not None and 8000 < int(left.group(1)) < 9000, log


def test_cloudevents_functions_framework_handler() -> None:
    wd = _served("--cloudevents", "shape_cloudevents_hello:hello")
    try:
        status, _, data = wd.request("POST", "/", b'{"k": 1}', {
            "ce-specversion": "1.0", "ce-id": "e2e-bin", "ce-source": "/t", "ce-type": "test.binary",
            "Content-Type": "application/json"})
        assert (status, data) == (204, b"")
        structured = {"specversion": "1.0", "id": "e2e-struct", "source": "/t", "type": "test.structured",
                      "datacontenttype": "text/plain", "data": "hi"}
        status, _, data = wd.request("POST", "/", json.dumps(structured).encode(),
                                     {"Content-Type": "application/cloudevents+json"})
        assert (status, data) == (204, b"")
        status, resp, data = wd.request("POST", "/", b"{}", {"Content-Type": "application/json",
                                                             "X-Request-Id": "e2e-none"})
        assert (status, json.loads(data)["type"], resp.getheader("AfterBurn-Error")) == (400, "bad_request",
                                                                                         "bad_request")
    finally:
        code, log = wd.stop()
    assert code == 0, log
    assert "Received event with ID: e2e-bin and data {'k': 1}" in log, log
    assert "Received event with ID: e2e-struct and data hi" in log, log
    assert "[e2e-none] afterburn: POST / is not a CloudEvent" in log, log
    assert "restart" not in log.lower()


# -- the launcher's flags ---------------------------------------------------------------------


def _launch(args: list[str], pythonpath: list[str]) -> subprocess.CompletedProcess[str]:
    import os

    env = {k: v for k, v in os.environ.items() if not k.startswith("AFTERBURN_")}
    env["PYTHONPATH"] = os.pathsep.join([*pythonpath, str(SRC), str(HERE / "apps")])
    return subprocess.run([sys.executable, "-m", "afterburn_runtime", *args], env=env, capture_output=True,
                          text=True, timeout=30, stdin=subprocess.DEVNULL)


def test_cloudevents_flag_without_the_sdk_names_the_extra(tmp_path) -> None:
    shadow = tmp_path / "cloudevents"
    shadow.mkdir()
    (shadow / "__init__.py").write_text("raise ImportError('no cloudevents here')\n")
    proc = _launch(["--cloudevents", "shape_cloudevents_hello:hello"], [str(tmp_path)])
    assert proc.returncode == 2, proc.stderr
    assert "--cloudevents needs the CloudEvents SDK: pip install 'afterburn-runtime[cloudevents]'" in proc.stderr


@pytest.mark.parametrize("args", [
    ["--openfaas", "--lambda", "m:f"], ["--lambda", "--json-dumps", "json:dumps", "m:f"], ["--openfaas", "--wsgi", "m:f"],
], ids=["two-shapes", "json-dumps", "shape-and-wsgi"])
def test_shape_flag_usage_errors(args: list[str]) -> None:
    proc = _launch(args, [])
    assert proc.returncode == 2 and "usage: python -m afterburn_runtime [--plain|--wsgi|--asgi|--openfaas|--lambda|" \
        "--cloudevents]" in proc.stderr, proc.stderr
