"""Handler shapes (PROTOCOL.md §13): every case of conformance/shapes/*.json, read in place,
through the adapters in-process (afterburn_runtime.testing.call(..., shape=...)), compared
as conformance/shapes/README.md says; then what the vectors leave to each language."""

from __future__ import annotations

import base64
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from afterburn_runtime import Response
from afterburn_runtime._cloudevents import event_class
from afterburn_runtime.testing import TestResponse, call

SHAPES_DIR = Path(__file__).resolve().parents[2] / "conformance" / "shapes"
# Each vector file's shape -> the name serve(..., shape=) and the launcher use.
SHAPE_NAMES = {"openfaas-http": "openfaas", "lambda-http": "lambda", "cloudevents": "cloudevents"}
ERROR_STATUS = {"handler_error": 500, "bad_request": 400}


def _cases() -> list[Any]:
    out = []
    for path in sorted(SHAPES_DIR.glob("*.json")):
        doc = json.loads(path.read_text())
        for case in doc["cases"]:
            out.append(pytest.param(doc["shape"], case, id=case["id"]))
    return out


CASES = _cases()


def test_the_vectors_are_found() -> None:
    assert {p.values[0] for p in CASES} == set(SHAPE_NAMES), SHAPES_DIR
    ids = [p.id for p in CASES]
    assert len(ids) == len(set(ids)), "case ids must be unique"


# -- comparison (conformance/shapes/README.md) -----------------------------------------------


def subset_mismatch(want: Any, got: Any, where: str = "") -> str | None:
    """None when ``got`` matches ``want`` as a subset ("$any", "$absent"), else where not."""
    if isinstance(want, dict):
        if not isinstance(got, dict):
            return f"{where or '.'}: got {got!r}, want an object"
        for key, value in want.items():
            at = f"{where}.{key}"
            if value == "$absent":
                if got.get(key) is not None:
                    return f"{at}: got {got[key]!r}, want it absent"
            elif value == "$any":
                if got.get(key) is None:
                    return f"{at}: missing"
            elif key not in got:
                return f"{at}: missing, want {value!r}"
            elif (mismatch := subset_mismatch(value, got[key], at)) is not None:
                return mismatch
        return None
    if want != got:
        return f"{where or '.'}: got {got!r}, want {want!r}"
    return None


def response_mismatch(want: dict[str, Any], got: TestResponse) -> str | None:
    if got.status != want["status"]:
        return f"status: got {got.status}, want {want['status']}"
    for name in dict.fromkeys(n.lower() for n, _ in want["headers"]):
        wanted = [v for n, v in want["headers"] if n.lower() == name]
        values = got.headers.get_all(name)
        if values[: len(wanted)] != wanted and not _in_order(wanted, values):
            return f"header {name}: got {values!r}, want {wanted!r}"
    body = base64.b64decode(want["body_b64"]) if "body_b64" in want else want["body"].encode()
    if got.body != body:
        return f"body: got {got.body!r}, want {body!r}"
    return None


def _in_order(wanted: list[str], values: list[str]) -> bool:
    it = iter(values)
    return all(any(v == w for v in it) for w in wanted)


# -- each shape's native objects as the vectors' JSON ----------------------------------------


def seen(shape: str, event: Any) -> dict[str, Any]:
    """The handler's native event as the JSON the vectors name."""
    if shape == "openfaas-http":
        out = {"method": event.method, "path": event.path,
               "query": {name: event.query.getlist(name) for name in event.query},
               "headers": {name.lower(): event.headers.getlist(name) for name in event.headers.keys()},
               "body_b64": base64.b64encode(event.body).decode()}
        try:
            out["body"] = event.body.decode()
        except UnicodeDecodeError:
            pass
        return out
    if shape == "lambda-http":
        return json.loads(json.dumps(event))  # it is the platform's JSON already
    out = dict(event.get_attributes())
    if isinstance(event.data, bytes):
        out["data_base64"] = base64.b64encode(event.data).decode()
    elif event.data is not None:
        out["data"] = event.data
    return out


def native_result(shape: str, result: Any) -> Any:
    """The vector's result as the handler would return it."""
    if shape != "cloudevents" or result is None:
        return result
    if "event" in result:
        CloudEvent = event_class()  # the SDK's dict-like class, of SDK 2 or SDK 1
        attributes = {k: v for k, v in result["event"].items() if k != "data"}
        return CloudEvent(attributes, result["event"].get("data"))
    r = result["response"]
    body = base64.b64decode(r["body_b64"]) if "body_b64" in r else r["body"].encode()
    return Response(body, r["status"], [tuple(h) for h in r["headers"]])


def run(shape: str, case: dict[str, Any]) -> tuple[TestResponse, list[Any]]:
    """Calls a handler of ``shape`` with the case's request; it records what it was given
    and returns the case's result. Returns the response and the recorded arguments."""
    given: list[Any] = []
    result = native_result(shape, case.get("result"))

    def handler(*args: Any) -> Any:
        given.append(args)
        return result

    req = case["request"]
    body = base64.b64decode(req["body_b64"]) if "body_b64" in req else req.get("body", "").encode()
    resp = call(handler, req["method"], req["target"], body, [tuple(h) for h in req["headers"]],
                request_id=req.get("request_id"), timeout_ms=req.get("timeout_ms"), shape=SHAPE_NAMES[shape])
    return resp, given


@pytest.mark.parametrize(("shape", "case"), CASES)
def test_shape_vector(shape: str, case: dict[str, Any], capfd: pytest.CaptureFixture[str]) -> None:
    resp, given = run(shape, case)
    where = f"{case['id']}: {case['description']}\n  request: {case['request']}"
    if "event" in case:
        assert given, f"{where}\n  the handler was not called; response {resp.status} {resp.body!r}"
        got = seen(shape, given[0][0])
        mismatch = subset_mismatch(case["event"], got)
        assert mismatch is None, f"{where}\n  event {mismatch}\n  got event: {json.dumps(got, default=str)}"
    if "context" in case:
        context = given[0][1]
        want = case["context"]
        assert context.aws_request_id == want["awsRequestId"], where
        left = context.get_remaining_time_in_millis()
        assert want["remaining_min_ms"] <= left <= want["remaining_max_ms"], f"{where}\n  remaining {left} ms"
    if "response" in case:
        mismatch = response_mismatch(case["response"], resp)
        assert mismatch is None, f"{where}\n  response {mismatch}\n  got {resp.status} {resp.headers!r} {resp.body!r}"
    if "error" in case:
        kind = case["error"]
        assert (resp.status, resp.headers.get("afterburn-error")) == (ERROR_STATUS[kind], kind), \
            f"{where}\n  got {resp.status} {resp.headers!r} {resp.body!r}"
        assert resp.json()["type"] == kind
        assert resp.worker_exit == 0, f"{where}: the worker must be kept"
        err = capfd.readouterr().err
        assert case["request"]["request_id"] in err, f"{where}: the error is logged with the request id; stderr:\n{err}"
        if kind == "bad_request":
            assert not given, f"{where}: a request that makes no event must not reach the handler"
    assert resp.worker_exit == 0


# -- OpenFaaS python3-http: what the template does where the vectors are silent --------------


def test_openfaas_event_reads_as_flask_request() -> None:
    got: list[Any] = []

    def handle(event: Any, context: Any) -> Any:
        got.append((event, context))

    call(handle, "GET", "/a%20b/c?x=1&x=2&e=", headers=[("X-Multi", "1"), ("x-multi", "2"), ("Content-Type", "text/plain")],
         shape="openfaas")
    event, context = got[0]
    assert event.path == "/a b/c"  # request.path is percent-decoded
    assert (event.query.get("x"), event.query.getlist("x"), event.query["e"], dict(event.query)) == \
        ("1", ["1", "2"], "", {"x": "1", "e": ""})
    assert event.query.get("x", type=int) == 1 and event.query.get("missing", "d") == "d"
    assert event.headers.get("x-multi") == "1, 2" == event.headers["X-MULTI"]  # one WSGI environ key
    assert event.headers.getlist("X-Multi") == ["1", "2"]
    assert dict(event.headers)["Content-Type"] == "text/plain"  # Werkzeug's Title-Case names
    assert "content-type" in event.headers and event.headers.get("nope") is None
    assert event.body == b""
    assert context.hostname


@pytest.mark.parametrize(("result", "status", "content_type", "body"), [
    (None, 200, "text/html; charset=utf-8", b""),
    ({"body": "hi"}, 200, "text/html; charset=utf-8", b"hi"),
    ({"body": {"b": 1, "a": "\u00e9"}}, 200, "application/json", b'{"a":"\\u00e9","b":1}'),  # jsonify: sorted, ASCII
    ({"body": 5}, 200, "text/html; charset=utf-8", b"5"),  # str(body)
    ({"body": b"\x00\xff", "headers": {"Content-Type": "application/octet-stream"}}, 200, "application/octet-stream",
     b"\x00\xff"),
    ({"body": {"a": 1}, "headers": {"Content-Type": "application/vnd.x+json"}}, 200, "application/vnd.x+json",
     b'{"a":1}'),
    ({"statusCode": 204, "headers": [("X-A", "1")]}, 204, "text/html; charset=utf-8", b""),  # Flask sets it too
    ("text", 200, "text/html; charset=utf-8", b"text"),
    ([1, 2], 200, "application/json", b"[1,2]"),
    (("gone", 410), 410, "text/html; charset=utf-8", b"gone"),
    (("x", {"X-A": "1"}), 200, "text/html; charset=utf-8", b"x"),
    (({"a": 1}, 202, {"X-A": 1}), 202, "application/json", b'{"a":1}'),
    (Response(b"raw", 203), 203, None, b"raw"),
], ids=["none", "str-body", "dict-body", "int-body", "bytes-body", "own-json-type", "headers-list", "str", "list",
        "tuple-status", "tuple-headers", "tuple-3", "response"])
def test_openfaas_results_as_the_template(result: Any, status: int, content_type: str | None, body: bytes) -> None:
    resp = call(lambda event, context: result, "POST", "/", shape="openfaas")
    assert (resp.status, resp.headers.get("content-type"), resp.body) == (status, content_type, body)


@pytest.mark.parametrize("result", [
    {"statusCode": True}, {"statusCode": 99}, {"statusCode": "200"}, {"headers": 5}, ("a", "b", "c"), 3.5, object(),
], ids=["bool-status", "status-99", "string-status", "headers-int", "bad-tuple", "float", "object"])
def test_openfaas_malformed_results_are_handler_errors(result: Any, capfd: pytest.CaptureFixture[str]) -> None:
    resp = call(lambda event, context: result, "GET", "/", request_id="of-x", shape="openfaas")
    assert (resp.status, resp.json()["type"], resp.worker_exit) == (500, "handler_error", 0)
    assert "[of-x] afterburn: exception serving GET /" in capfd.readouterr().err


def test_openfaas_async_handler() -> None:
    async def handle(event: Any, context: Any) -> Any:
        return {"statusCode": 201, "body": event.body.decode().upper()}

    resp = call(handle, "POST", "/", body=b"abc", shape="openfaas")
    assert (resp.status, resp.body) == (201, b"ABC")


# -- Lambda -----------------------------------------------------------------------------------


def test_lambda_context_has_the_runtime_names(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_LAMBDA_FUNCTION_NAME", "orders")
    got: list[Any] = []
    call(lambda event, context: got.append(context), "GET", "/", request_id="rid-ctx", shape="lambda")
    ctx = got[0]
    assert (ctx.aws_request_id, ctx.function_name, ctx.function_version) == ("rid-ctx", "orders", "$LATEST")
    assert ctx.invoked_function_arn.endswith(":function:orders") and ctx.log_group_name == "/aws/lambda/orders"
    assert (ctx.memory_limit_in_mb, ctx.identity, ctx.client_context) == ("128", None, None)
    assert ctx.get_remaining_time_in_millis() == 900_000  # no deadline: Lambda's longest timeout


def test_lambda_event_edges() -> None:
    got: list[Any] = []
    call(lambda event, context: got.append(event), "POST", "/t", body=b"\xff\xfe",
         headers=[("Content-Type", "text/plain"), ("X-Forwarded-For", "203.0.113.9, 10.0.0.1"),
                  ("Cookie", "a=1"), ("Cookie", "b=2")], shape="lambda")
    ev = got[0]
    assert (ev["body"], ev["isBase64Encoded"]) == ("//4=", True)  # text that is not UTF-8: no byte lost
    assert ev["requestContext"]["http"]["sourceIp"] == "203.0.113.9"
    assert ev["cookies"] == ["a=1", "b=2"]


@pytest.mark.parametrize(("result", "body"), [
    (None, b"null"), ([1, "é"], b'[1,"\xc3\xa9"]'), (3, b"3"),
], ids=["none", "list", "number"])
def test_lambda_results_without_status_code_are_json(result: Any, body: bytes) -> None:
    resp = call(lambda event, context: result, "GET", "/", shape="lambda")
    assert (resp.status, resp.headers.get("content-type"), resp.body) == (200, "application/json", body)


@pytest.mark.parametrize("result", [
    {"statusCode": 200, "body": {"a": 1}}, {"statusCode": 200, "headers": {"x": ["a"]}},
    {"statusCode": 200, "cookies": "a=1"}, {"statusCode": 600},
], ids=["object-body", "list-header", "cookies-string", "status-600"])
def test_lambda_malformed_results_are_handler_errors(result: Any) -> None:
    resp = call(lambda event, context: result, "GET", "/", shape="lambda")
    assert (resp.status, resp.json()["type"], resp.worker_exit) == (500, "handler_error", 0)


def test_lambda_async_handler() -> None:
    async def handler(event: Any, context: Any) -> Any:
        return {"statusCode": 200, "body": event["rawPath"]}

    assert call(handler, "GET", "/p", shape="lambda").body == b"/p"


# -- CloudEvents ------------------------------------------------------------------------------

CE = [("ce-specversion", "1.0"), ("ce-id", "1"), ("ce-source", "/s"), ("ce-type", "t")]


def test_cloudevents_binary_values_are_percent_decoded_and_nothing_is_invented() -> None:
    got: list[Any] = []
    call(lambda ev: got.append(ev), "POST", "/", body=b"123",
         headers=[*CE, ("ce-subject", "a%20b%22%C3%A9"), ("content-type", "text/plain")], shape="cloudevents")
    ev = got[0]
    assert (ev["subject"], ev.data) == ('a b"é', "123")  # text stays text, even when it looks like JSON
    assert "time" not in ev


@pytest.mark.parametrize("headers", [
    [*CE[:3], ("ce-type", "")],
    [("ce-specversion", "0.3"), *CE[1:]],
    [*CE, ("ce-Bad_Name", "x")],
    [*CE, ("content-type", "application/json")],  # data that is not JSON ("{")
    [("content-type", "application/cloudevents-batch+json")],
], ids=["empty-type", "specversion-0.3", "bad-attribute-name", "data-not-its-type", "batch"])
def test_cloudevents_requests_that_make_no_event_are_bad_requests(headers: list[tuple[str, str]]) -> None:
    resp = call(lambda ev: pytest.fail("called"), "POST", "/", body=b"{", headers=headers, shape="cloudevents")
    assert (resp.status, resp.json()["type"], resp.worker_exit) == (400, "bad_request", 0)


def test_cloudevents_reply_from_the_v2_core_api() -> None:
    import datetime

    CloudEvent = pytest.importorskip("cloudevents.core.v1.event", reason="SDK 2's own API").CloudEvent

    reply = CloudEvent(attributes={"type": "r", "source": "/fn", "id": "r1",
                                   "time": datetime.datetime(2026, 1, 2, 3, 4, 5, tzinfo=datetime.timezone.utc)},
                       data=b"\x00\x01")
    resp = call(lambda ev: reply, "POST", "/", headers=CE, shape="cloudevents")
    assert (resp.status, resp.body, resp.headers.get("content-type")) == (200, b"\x00\x01", None)
    assert (resp.headers.get("ce-id"), resp.headers.get("ce-time")) == ("r1", "2026-01-02T03:04:05Z")


def test_cloudevents_plain_results() -> None:
    assert call(lambda ev: {"a": 1}, "POST", "/", headers=CE, shape="cloudevents").json() == {"a": 1}
    assert call(lambda ev: "ok", "POST", "/", headers=CE, shape="cloudevents").body == b"ok"


def test_cloudevents_async_handler() -> None:
    async def handle(ev: Any) -> Any:
        return Response(ev["id"].encode(), 202)

    resp = call(handle, "POST", "/", headers=CE, shape="cloudevents")
    assert (resp.status, resp.body) == (202, b"1")


def test_cloudevents_without_the_sdk_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in [m for m in sys.modules if m == "cloudevents" or m.startswith("cloudevents.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "cloudevents", None)  # import cloudevents -> ImportError
    with pytest.raises(ImportError, match=r"pip install 'afterburn-runtime\[cloudevents\]'"):
        call(lambda ev: None, "POST", "/", headers=CE, shape="cloudevents")


def test_an_unknown_shape_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown handler shape 'gcf'"):
        call(lambda req: None, shape="gcf")
