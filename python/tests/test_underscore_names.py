"""Field names with underscores (PROTOCOL.md §5.5): the WSGI environ names fields as CGI
does, so ``X_Forwarded_For`` and ``X-Forwarded-For`` would share ``HTTP_X_FORWARDED_FOR``;
serve_wsgi drops names holding ``_`` unless told to keep them. Plain handlers and ASGI apps
see names as sent, so both fields stay two fields there."""

from __future__ import annotations

import asgi_fixture
import pytest
import vectors
import wsgi_fixture
from afterburn_fixture import handle
from workers import HANDSHAKE, Worker

from afterburn_runtime.testing import call, call_asgi, call_wsgi

SPOOFED = [("X_Forwarded_For", "spoof"), ("X-Forwarded-For", "real")]


def environ_app(environ, start_response):
    """Reports what a WSGI app sees of the two fields: the environ key and the Request."""
    req = environ["afterburn.request"]
    start_response("200 OK", [("Content-Type", "application/json")])
    import json

    return [json.dumps({
        "environ": environ.get("HTTP_X_FORWARDED_FOR"),
        "keys": sorted(k for k in environ if "FORWARDED" in k),
        "request": [[n, v] for n, v in req.headers if "forwarded" in n],
    }).encode()]


@pytest.mark.parametrize("fields", [SPOOFED, SPOOFED[::-1]], ids=["spoof-first", "spoof-last"])
def test_wsgi_drops_underscore_names_by_default(fields) -> None:
    got = call_wsgi(environ_app, headers=fields).json()
    assert got == {"environ": "real", "keys": ["HTTP_X_FORWARDED_FOR"], "request": [["x-forwarded-for", "real"]]}


def test_wsgi_keeps_them_when_told() -> None:
    # Kept, both names become the one key HTTP_X_FORWARDED_FOR, and like any repeated field
    # their values are joined with ", " in arrival order: "spoof, real". An app (or a proxy
    # middleware such as werkzeug's ProxyFix) reading the key takes "spoof" as the first hop,
    # which is what the default prevents. The Request still holds both lines apart.
    got = call_wsgi(environ_app, headers=SPOOFED, keep_underscore_headers=True).json()
    assert got == {"environ": "spoof, real", "keys": ["HTTP_X_FORWARDED_FOR"],
                   "request": [["x_forwarded_for", "spoof"], ["x-forwarded-for", "real"]]}


def test_other_underscore_names_are_dropped_too() -> None:
    def app(environ, start_response):
        start_response("200 OK", [])
        return [repr(sorted(k for k in environ if k.startswith(("HTTP_", "CONTENT_")))).encode()]

    got = call_wsgi(app, headers=[("AfterBurn_Request_Id", "forged"), ("Content_Type", "x"), ("X-Ok", "1")])
    assert got.body == b"['CONTENT_LENGTH', 'HTTP_HOST', 'HTTP_X_OK']"


def test_plain_handlers_see_both_names() -> None:
    seen = []
    call(lambda req: seen.append((req.headers.get_all("x_forwarded_for"), req.headers.get_all("x-forwarded-for"))),
         headers=SPOOFED)
    assert seen == [(["spoof"], ["real"])]


def test_asgi_apps_see_both_names() -> None:
    seen = []

    async def app(scope, receive, send):
        seen.append([(n, v) for n, v in scope["headers"] if b"forwarded" in n])
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    call_asgi(app, headers=SPOOFED)
    assert seen == [[(b"x_forwarded_for", b"spoof"), (b"x-forwarded-for", b"real")]]


# -- the fixtures' echo ------------------------------------------------------------------------

BOTH = [["x_forwarded_for", "spoof"], ["x-forwarded-for", "real"]]


@pytest.mark.parametrize(("style", "want"), [
    ("wsgi", [["x-forwarded-for", "real"]]),
    ("wsgi-keep", BOTH),
    ("plain", BOTH),
    ("asgi", BOTH),
])
def test_fixture_echo(style: str, want: list) -> None:
    if style.startswith("wsgi"):
        resp = call_wsgi(wsgi_fixture.app, "GET", "/echo", headers=SPOOFED,
                         keep_underscore_headers=style == "wsgi-keep")
    elif style == "plain":
        resp = call(handle, "GET", "/echo", headers=SPOOFED)
    else:
        resp = call_asgi(asgi_fixture.app, "GET", "/echo", headers=SPOOFED)
    got = [tuple(p) for p in resp.json()["headers"]]
    # Per name (conformance/README.md, "Field lists"): exactly these values, in order; and a
    # name the expectation lacks must be absent.
    assert vectors.compare_fields("header", got, [tuple(p) for p in want]) == []
    assert {n for n, _ in got if "forwarded" in n} == {n for n, _ in want}


# -- the launcher ----------------------------------------------------------------------------------

ECHO = b"GET /echo HTTP/1.1\r\nHost: fn\r\nX_Forwarded_For: spoof\r\nX-Forwarded-For: real\r\n\r\n"


@pytest.mark.parametrize(("args", "want"), [
    (["--wsgi", "wsgi_fixture:app"], [["x-forwarded-for", "real"]]),
    (["wsgi_fixture:app"], [["x-forwarded-for", "real"]]),  # guessed WSGI: the same default
    (["--wsgi", "--keep-underscore-headers", "wsgi_fixture:app"], BOTH),
    (["--keep-underscore-headers", "--wsgi", "wsgi_fixture:app"], BOTH),
    (["--keep-underscore-headers", "afterburn_fixture:handle"], BOTH),  # a plain handler keeps them anyway
])
def test_launcher(args: list[str], want: list) -> None:
    w = Worker(["-m", "afterburn_runtime", *args])
    w.send(HANDSHAKE + ECHO)
    w.response()
    got = [p for p in w.response().json()["headers"] if "forwarded" in p[0]]
    assert got == want
    assert w.wait()[0] == 0
