"""Response framing (PROTOCOL.md §4.4, §6.1, §8.3)."""

from __future__ import annotations

import pytest

from afterburn_runtime import Response
from afterburn_runtime._writer import IncompleteResponse, ResponseWriter
from afterburn_runtime.testing import parse_response


def writer(is_head: bool = False) -> tuple[ResponseWriter, list[bytes]]:
    sent: list[bytes] = []
    return ResponseWriter(lambda parts: sent.append(b"".join(parts)), is_head), sent


def test_known_length_goes_out_in_one_write_with_content_length() -> None:
    w, sent = writer()
    w.start(200, [("X-A", "1")], 5)
    assert sent == []  # the head waits for the body
    w.write(b"hello")
    w.end()
    assert sent == [b"HTTP/1.1 200 OK\r\nX-A: 1\r\nContent-Length: 5\r\n\r\nhello"]


def test_a_stream_is_chunked_and_each_piece_goes_out_at_once() -> None:
    w, sent = writer()
    w.start(200, [])
    w.write(b"one")
    assert sent == [b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\none\r\n"]
    w.write(b"")  # never an empty chunk: that would be the last one
    w.write(b"twotwo")
    assert sent[1] == b"6\r\ntwotwo\r\n"
    w.end([("X-Sum", "9")])
    assert sent[2] == b"0\r\nX-Sum: 9\r\n\r\n"
    resp, rest = parse_response(b"".join(sent))
    assert (resp.body, resp.trailers.get("x-sum"), rest) == (b"onetwotwo", "9", b"")


def test_declared_length_is_used_and_enforced() -> None:
    w, sent = writer()
    w.start(200, [("Content-Length", "3")])
    w.write(b"ab")
    with pytest.raises(IncompleteResponse):
        w.write(b"cd")
    with pytest.raises(IncompleteResponse):
        w.end()  # §8.3: a short body must not look complete
    assert b"".join(sent) == b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nab"


def test_head_response_has_no_body_but_may_have_its_length() -> None:
    w, sent = writer(is_head=True)
    w.start(200, [], 100)
    w.write(b"x" * 100)
    w.end()
    assert sent == [b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n"]


@pytest.mark.parametrize("status", [204, 304])
def test_204_and_304_have_no_body(status: int) -> None:
    w, sent = writer()
    w.start(status, [], 0)
    w.end()
    assert b"Content-Length" not in sent[0] and sent[0].endswith(b"\r\n\r\n")


@pytest.mark.parametrize("status", [100, 103, 199, 1000, "200"])
def test_1xx_and_non_integer_statuses_are_refused(status) -> None:
    w, _ = writer()
    with pytest.raises(ValueError):
        w.start(status, [])


@pytest.mark.parametrize("field", [("Bad Name", "v"), ("X", "a\r\nInjected: 1"), ("X", "a\nb"), ("X", "a\x00")])
def test_fields_that_would_split_the_response_are_refused(field) -> None:
    w, _ = writer()
    with pytest.raises(ValueError):
        w.start(200, [field])


def test_handler_framing_fields_are_replaced_by_the_library() -> None:
    w, sent = writer()
    w.start(200, [("Transfer-Encoding", "gzip"), ("Content-Length", "2")], 2)
    w.write(b"ok")
    w.end()
    assert sent == [b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"]


def test_unknown_status_has_an_empty_reason() -> None:
    w, sent = writer()
    w.start(599, [], 0)
    w.end()
    assert sent[0].startswith(b"HTTP/1.1 599 \r\n")


def test_response_constructor() -> None:
    r = Response("héllo", 201, {"X-A": "1"})
    assert (r.status, r.body) == (201, "héllo".encode())
    assert ("Content-Type", "text/plain; charset=utf-8") in r.headers
    j = Response.json({"a": 1})
    assert j.body == b'{"a": 1}' and ("Content-Type", "application/json") in j.headers
    assert Response(b"x", headers=[("Set-Cookie", "a=1"), ("Set-Cookie", "b=2")]).headers == [
        ("Set-Cookie", "a=1"), ("Set-Cookie", "b=2")]


# -- the head cache must not change or loosen what is written --------------------------------


def test_cached_heads_follow_the_fields_and_status() -> None:
    out = []
    for status, fields in [(200, [("X-A", "1")]), (200, [("X-A", "2")]), (201, [("X-A", "1")]),
                           (200, [("X-A", "1")]), (200, [["X-A", "1"]])]:
        w, sent = writer()
        w.start(status, fields, 2)
        w.write(b"ok")
        w.end()
        out.append(sent[0])
    assert out[0] == out[3] == out[4] == b"HTTP/1.1 200 OK\r\nX-A: 1\r\nContent-Length: 2\r\n\r\nok"
    assert out[1] == b"HTTP/1.1 200 OK\r\nX-A: 2\r\nContent-Length: 2\r\n\r\nok"
    assert out[2] == b"HTTP/1.1 201 Created\r\nX-A: 1\r\nContent-Length: 2\r\n\r\nok"


@pytest.mark.parametrize("fields", [[("X A", "1")], [("X-A", "a\r\nX-B: 2")], [("X-A", "a\x00")]])
def test_a_bad_field_is_refused_every_time(fields: list) -> None:
    for _ in range(2):  # a refused head is never cached
        w, sent = writer()
        with pytest.raises(ValueError):
            w.start(200, fields, 0)
        assert sent == []


def test_a_cached_declared_length_is_still_enforced() -> None:
    for _ in range(2):
        w, _ = writer()
        with pytest.raises(IncompleteResponse):
            w.write_whole(200, [("Content-Length", "3")], b"ab")


def test_write_whole_is_start_write_end() -> None:
    for is_head, status, fields, body in [(False, 200, [], b"abc"), (False, 200, [], b""),
                                          (True, 200, [], b"abc"), (False, 204, [], b""),
                                          (False, 304, [("Content-Length", "3")], b"abc")]:
        w1, sent1 = writer(is_head)
        w1.start(status, fields, len(body))
        w1.write(body)
        w1.end()
        w2, sent2 = writer(is_head)
        w2.write_whole(status, fields, body)
        assert sent1 == sent2, (is_head, status)
        assert (w1.sent, w1.written) == (w2.sent, w2.written)
