"""The Request API: body as bytes and as a stream, JSON, query, headers."""

from __future__ import annotations

import pytest

from afterburn_runtime import Headers, Request
from afterburn_runtime.testing import call


def source(*pieces: bytes):
    items = list(pieces)
    return lambda: items.pop(0) if items else b""


def make(*pieces: bytes) -> Request:
    return Request("POST", "/p?a=1&a=2&b=", Headers([("content-type", "x")]), "rid", source=source(*pieces))


def test_read_sizes_and_lines() -> None:
    req = make(b"one\ntw", b"o\nthree")
    assert req.read(2) == b"on"
    assert req.readline() == b"e\n"
    assert req.readline() == b"two\n"
    assert req.read() == b"three"
    assert req.read() == b""


def test_iteration_is_by_line() -> None:
    assert list(make(b"a\nb", b"\nc")) == [b"a\n", b"b\n", b"c"]


def test_stream_gives_pieces_as_they_come() -> None:
    assert list(make(b"ab", b"cd").stream()) == [b"ab", b"cd"]


def test_body_is_read_once_and_kept() -> None:
    req = make(b'{"a"', b": 1}")
    assert req.body == b'{"a": 1}'
    assert req.json() == {"a": 1}
    assert req.text() == '{"a": 1}'


def test_body_after_a_partial_stream_read_is_an_error() -> None:
    req = make(b"abc")
    req.read(1)
    with pytest.raises(RuntimeError):
        _ = req.body


def test_query_helpers() -> None:
    req = make()
    assert (req.path, req.query) == ("/p", "a=1&a=2&b=")
    assert req.args == {"a": ["1", "2"], "b": [""]}
    assert (req.arg("a"), req.arg("zz", "d")) == ("1", "d")


def test_headers_are_multi_valued_and_case_insensitive() -> None:
    h = Headers([("accept", "a"), ("x", "1"), ("accept", "b")])
    assert (h["Accept"], h.get("ACCEPT"), h.get_all("accept")) == ("a", "a", ["a", "b"])
    assert "X" in h and "y" not in h and h.get("y") is None
    with pytest.raises(KeyError):
        h["y"]
    assert list(h) == [("accept", "a"), ("x", "1"), ("accept", "b")] and len(h) == 3


def test_repeated_request_fields_reach_the_handler_in_order() -> None:
    got = []
    call(lambda req: got.append(req.headers.get_all("x-rep")), headers=[("X-Rep", "1"), ("x-rep", "2")])
    assert got == [["1", "2"]]


def test_trailers_after_the_body() -> None:
    got = []

    def handler(req):
        _ = req.body
        got.append(req.trailers.get("x-sum"))

    call(handler, "POST", "/", headers=[("Transfer-Encoding", "chunked")], body=b"3\r\nabc\r\n0\r\nX-Sum: 7\r\n\r\n")
    assert got == ["7"]
