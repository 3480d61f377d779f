"""Trailers (conformance contract A): request trailers reach every handler style once the
body has been read, and every style can end a chunked response with trailer fields: plain
handlers (``Response(trailers=...)``), WSGI apps (``environ["afterburn.response_trailers"]``)
and ASGI apps (the HTTP Trailers extension, ``http.response.trailers``)."""

from __future__ import annotations

import hashlib

import afterburn_fixture
import asgi_fixture
import pytest
import wsgi_fixture

from afterburn_runtime import Response
from afterburn_runtime.testing import call, call_asgi, call_wsgi

CHUNKED = {"Transfer-Encoding": "chunked"}
# "abc" + "déf", then the trailer section: a repeated field and another one.
BODY = b"3\r\nabc\r\n4\r\nd\xc3\xa9f\r\n0\r\nX-Sum: 1\r\nx-sum: 2\r\nX-Other: o\r\n\r\n"

CALLERS = {
    "plain": lambda *a, **k: call(afterburn_fixture.handle, *a, **k),
    "wsgi": lambda *a, **k: call_wsgi(wsgi_fixture.app, *a, **k),
    "asgi": lambda *a, **k: call_asgi(asgi_fixture.app, *a, **k),
}


@pytest.mark.parametrize("style", sorted(CALLERS))
def test_the_fixture_trailers_route(style: str) -> None:
    resp = CALLERS[style]("POST", "/trailers", body=BODY, headers=CHUNKED)
    assert (resp.status, resp.chunked, resp.complete) == (200, True, True)
    assert resp.headers.get("trailer") == "X-Fixture-Trailer"
    assert resp.json() == {"body": "abcdéf", "trailers": {"x-sum": "1, 2", "x-other": "o"}}
    assert resp.trailers.items() == [("x-fixture-trailer", "done")]


@pytest.mark.parametrize("style", sorted(CALLERS))
def test_a_body_without_trailers(style: str) -> None:
    resp = CALLERS[style]("POST", "/trailers", body=b"hi")
    assert resp.json() == {"body": "hi", "trailers": {}}
    assert resp.trailers.items() == [("x-fixture-trailer", "done")]


def test_a_plain_streamed_body_ends_with_trailers_computed_at_its_end() -> None:
    digest = hashlib.sha256()

    def handler(req):
        def pieces():
            for part in (b"one ", b"two"):
                digest.update(part)
                yield part
        return Response(pieces(), headers={"Trailer": "X-Sha256"},
                        trailers=lambda: [("X-Sha256", digest.hexdigest())])

    resp = call(handler)
    assert (resp.body, resp.chunked) == (b"one two", True)
    assert resp.trailers.get("x-sha256") == hashlib.sha256(b"one two").hexdigest()


def test_a_wsgi_app_fills_its_trailers_while_its_body_streams() -> None:
    def app(environ, start_response):
        start_response("200 OK", [("Trailer", "X-Count")])
        trailers = environ["afterburn.response_trailers"]

        def pieces():
            yield b"a"
            yield b"b"
            trailers.append(("X-Count", "2"))
        return pieces()

    resp = call_wsgi(app)
    assert (resp.body, resp.chunked, resp.trailers.items()) == (b"ab", True, [("x-count", "2")])


def test_a_wsgi_list_body_with_trailers_is_chunked_not_content_length() -> None:
    def app(environ, start_response):
        environ["afterburn.response_trailers"].append(("X-Done", "1"))
        start_response("200 OK", [])
        return [b"whole"]

    resp = call_wsgi(app)
    assert resp.headers.get("content-length") is None
    assert (resp.body, resp.chunked, resp.trailers.items()) == (b"whole", True, [("x-done", "1")])


def test_an_asgi_app_may_send_its_trailers_in_several_messages() -> None:
    async def app(scope, receive, send):
        assert "http.response.trailers" in scope["extensions"]
        await send({"type": "http.response.start", "status": 200, "headers": [], "trailers": True})
        await send({"type": "http.response.body", "body": b"x", "more_body": True})
        await send({"type": "http.response.body", "body": b"y"})
        await send({"type": "http.response.trailers", "headers": [(b"a", b"1")], "more_trailers": True})
        await send({"type": "http.response.trailers", "headers": [(b"b", b"2")]})

    resp = call_asgi(app)
    assert (resp.body, resp.chunked, resp.trailers.items()) == (b"xy", True, [("a", "1"), ("b", "2")])


def test_asgi_trailers_that_were_not_announced_are_an_error() -> None:
    async def app(scope, receive, send):
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"x"})
        await send({"type": "http.response.trailers", "headers": [(b"a", b"1")]})

    resp = call_asgi(app)
    assert resp.status == 200 and resp.body == b"x"  # the response had ended; the error is logged


def test_an_asgi_app_that_announced_trailers_and_never_sent_them_is_incomplete() -> None:
    async def app(scope, receive, send):
        await send({"type": "http.response.start", "status": 200, "headers": [], "trailers": True})
        await send({"type": "http.response.body", "body": b"x"})

    resp = call_asgi(app)
    assert (resp.chunked, resp.complete, resp.worker_exit) == (True, False, 1)  # §8.3
