"""One exchange through the serve loop, in memory: handler styles, errors (PROTOCOL.md
§8.3, §8.8), draining (§6.3), metadata (§5), the handshake (§3)."""

from __future__ import annotations

import os
import re
import time

import pytest

from afterburn_runtime import ProtocolError, Request, Response
from afterburn_runtime._conn import Conn
from afterburn_runtime._handler import plain_responder
from afterburn_runtime._parser import RequestParser
from afterburn_runtime._exchange import serve_stream
from afterburn_runtime.testing import call, parse_response


def serve_bytes(handler, data: bytes, max_body: int = 0) -> tuple[int, bytes]:
    """Runs the serve loop over data (then EOF); returns the exit status and the output."""
    chunks = [data]
    out = bytearray()

    def read(n: int) -> bytes:
        return chunks.pop(0) if chunks else b""

    def write(b: bytes) -> int:
        out.extend(b)
        return len(b)

    conn = Conn(read, write, RequestParser(65536, max_body))
    return serve_stream(conn, plain_responder(handler, lambda: None)), bytes(out)


def boom(req: Request) -> Response:
    raise ValueError("secret-token-123")


def test_handler_exception_is_a_500_handler_error(capfd) -> None:
    resp = call(boom, request_id="rid-1")
    assert resp.status == 500
    assert resp.headers.get("afterburn-error") == "handler_error"
    assert resp.headers.get("content-type") == "application/json"
    assert resp.json() == {"type": "handler_error", "message": "the function failed while handling the request",
                           "request_id": "rid-1"}
    assert resp.worker_exit == 0  # §8.3: the worker keeps serving
    err = capfd.readouterr().err
    assert err.startswith("[rid-1] afterburn: exception serving GET /\nTraceback")
    assert "ValueError: secret-token-123" in err


def test_the_traceback_is_one_write(monkeypatch) -> None:
    writes = []
    real_write = os.write

    def spy(fd: int, data: bytes) -> int:
        if fd == 2:
            writes.append(bytes(data))
            return len(data)
        return real_write(fd, data)

    monkeypatch.setattr(os, "write", spy)
    call(boom, request_id="rid-2")
    assert len(writes) == 1
    assert writes[0].startswith(b"[rid-2] ") and b"secret-token-123" in writes[0]


def test_exception_after_the_head_leaves_the_response_incomplete() -> None:
    def handler(req):
        def body():
            yield b"partial"
            raise RuntimeError("mid-body")

        return Response(body())

    resp = call(handler)
    assert (resp.status, resp.chunked, resp.complete, resp.body) == (200, True, False, b"partial")
    assert resp.worker_exit != 0  # §8.3: exit non-zero


def test_exception_before_the_first_piece_is_still_a_500() -> None:
    def handler(req):
        def body():
            raise RuntimeError("before")
            yield b""

        return Response(body())

    assert call(handler).status == 500


def test_short_content_length_stream_is_incomplete() -> None:
    def handler(req):
        return Response(iter([b"ab", b"c"]), headers={"Content-Length": "5"})

    resp = call(handler)
    assert (resp.complete, resp.worker_exit != 0) == (False, True)


@pytest.mark.parametrize("result", [42, object()])
def test_a_bad_return_value_is_a_handler_error(result) -> None:
    assert call(lambda req: result).status == 500


def test_return_value_conveniences() -> None:
    assert call(lambda req: "hi").body == b"hi"
    assert call(lambda req: b"\x00\xff").body == b"\x00\xff"
    assert call(lambda req: {"a": [1]}).json() == {"a": [1]}
    assert (call(lambda req: None).status, call(lambda req: None).body) == (200, b"")


def test_async_handler_and_async_body() -> None:
    async def handler(req: Request) -> Response:
        async def body():
            yield b"a"
            yield "b"

        return Response(body())

    resp = call(handler, "POST", "/x", body=b"in")
    assert (resp.status, resp.chunked, resp.body) == (200, True, b"ab")


def test_a_framing_error_under_the_handler_wins_even_if_the_handler_catches_it() -> None:
    def handler(req: Request) -> Response:
        try:
            _ = req.body
        except ProtocolError:
            pass
        return Response(b"looks fine")

    status, out = serve_bytes(handler, b"POST / HTTP/1.1\r\nHost: fn\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n")
    resp, rest = parse_response(out)
    assert (resp.status, resp.json()["type"], rest, status) == (400, "bad_request", b"", 1)


def test_a_framing_error_in_an_unread_short_body_is_answered_as_one() -> None:
    status, out = serve_bytes(lambda req: "unread",
                              b"POST / HTTP/1.1\r\nHost: fn\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabcX")
    resp, _ = parse_response(out)
    assert (resp.status, status) == (400, 1)


def test_chunked_body_over_the_limit_while_the_handler_reads() -> None:
    status, out = serve_bytes(lambda req: req.body, b"POST / HTTP/1.1\r\nHost: fn\r\nTransfer-Encoding: chunked\r\n\r\n"
                              + b"8\r\n01234567\r\n" * 3, max_body=16)
    resp, _ = parse_response(out)
    assert (resp.status, resp.json()["type"], status) == (413, "body_too_large", 1)


def test_oversized_content_length_never_reaches_the_handler() -> None:
    called = []
    status, out = serve_bytes(lambda req: called.append(1), b"POST / HTTP/1.1\r\nHost: fn\r\nContent-Length: 17\r\n\r\n",
                              max_body=16)
    assert (parse_response(out)[0].status, called, status) == (413, [], 1)


def test_unread_body_is_drained_before_the_next_request() -> None:
    seen = []

    def handler(req: Request) -> str:
        seen.append((req.path, req.read(2)))
        return "ok"

    body = b"x" * 300_000  # more than the library reads before it answers
    status, _ = serve_bytes(handler, b"POST /a HTTP/1.1\r\nHost: fn\r\nContent-Length: %d\r\n\r\n" % len(body)
                            + body + b"GET /b HTTP/1.1\r\nHost: fn\r\n\r\n")
    assert seen == [("/a", b"xx"), ("/b", b"")]
    assert status == 0


def test_eof_between_requests_ends_the_loop_with_0() -> None:
    status, out = serve_bytes(lambda req: "ok", b"GET / HTTP/1.1\r\nHost: fn\r\n\r\n")
    assert (status, parse_response(out)[0].status) == (0, 200)


def test_eof_inside_a_body_is_answered_400() -> None:
    status, out = serve_bytes(lambda req: req.body, b"POST / HTTP/1.1\r\nHost: fn\r\nContent-Length: 5\r\n\r\nab")
    assert (status, parse_response(out)[0].status) == (1, 400)


def test_handshake_is_answered_by_the_library_wherever_it_comes() -> None:
    paths = []
    status, out = serve_bytes(lambda req: paths.append(req.path) or "ok",
                              b"GET /1 HTTP/1.1\r\nHost: fn\r\n\r\n"
                              b"GET /hs HTTP/1.1\r\nHost: afterburn\r\nAfterBurn-Handshake: 7, 1\r\nContent-Length: 0\r\n\r\n"
                              b"GET /2 HTTP/1.1\r\nHost: fn\r\n\r\n")
    first, rest = parse_response(out)
    hs, rest = parse_response(rest)
    second, rest = parse_response(rest)
    assert (first.body, second.body, rest) == (b"ok", b"ok", b"")
    assert hs.headers.get("afterburn-protocol") == "1" and hs.headers.get("content-length") == "0"
    assert hs.headers.get("afterburn-library") == "python/0.1.0"
    assert paths == ["/1", "/2"] and status == 0


def test_request_id_is_generated_without_one() -> None:
    ids = []
    call(lambda req: ids.append(req.request_id))
    assert re.fullmatch("[0-9a-f]{32}", ids[0])


def test_deadline_counts_from_the_head() -> None:
    seen = []

    def handler(req: Request) -> str:
        seen.append((req.deadline, req.time_remaining))
        return "ok"

    before = time.monotonic()
    call(handler, timeout_ms=5000)
    call(handler)
    (deadline, left), (none, none_left) = seen
    assert before + 5 <= deadline <= time.monotonic() + 5
    assert 0 < left <= 5
    assert (none, none_left) == (None, None)


def test_time_remaining_is_never_negative() -> None:
    seen = []
    call(lambda req: seen.append(req.time_remaining), timeout_ms=0)
    assert seen == [0.0]


def test_the_deadline_is_on_the_event_loop_clock() -> None:
    # README: `asyncio.timeout_at(req.deadline)` cancels work at the deadline (§5.2 SHOULD).
    import asyncio

    if not hasattr(asyncio, "timeout_at"):
        pytest.skip("asyncio.timeout_at needs Python 3.11")

    async def handler(req: Request) -> str:
        try:
            async with asyncio.timeout_at(req.deadline):
                await asyncio.sleep(30)
        except TimeoutError:
            return "cancelled at the deadline"
        return "slept"

    started = time.monotonic()
    assert call(handler, timeout_ms=20).body == b"cancelled at the deadline"
    assert time.monotonic() - started < 10
