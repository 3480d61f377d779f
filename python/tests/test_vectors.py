"""Every `parse` vector of conformance/vectors, read in place, through the pure core (all
bytes in one read, and one segment per read) and through the serve loop with the
fixture's echo route, whose output is parsed back as a watchdog would: the plain handler's
loop, and the ASGI adapter's on each event loop the library may use (asyncio's, uvloop's:
the opt-in accelerator, issue 30)."""

from __future__ import annotations

import base64
import json

import asgi_fixture
import pytest
import vectors
from afterburn_fixture import echo
from loops import LOOPS, loop_kind, use_loop

from afterburn_runtime._asgi import AsgiAdapter
from afterburn_runtime._conn import Conn
from afterburn_runtime._errors import ProtocolError
from afterburn_runtime._fds import limits_from_env
from afterburn_runtime._handler import plain_responder
from afterburn_runtime._parser import END_OF_STREAM, NEED_DATA, EndOfMessage, RequestHead, RequestParser
from afterburn_runtime._exchange import serve_stream
from afterburn_runtime.testing import parse_response

PARSE = vectors.load("parse")


def core_echo(head: RequestHead, body: bytes, trailers: list) -> dict:
    """The echo format, as the core presents a request."""
    return {
        "method": head.method, "path": head.path, "query": head.query,
        "headers": head.fields, "trailers": trailers,
        "body_b64": base64.b64encode(body).decode(), "body_len": len(body),
        "request_id": head.request_id,
    }


def run_core(vector: dict, reads: list[bytes]) -> list:
    """Feeds reads one by one, taking every event after each, then the EOF if the vector
    closes the request pipe. Returns the echoes, then the ProtocolError if one was raised."""
    parser = RequestParser(*limits_from_env(vectors.env(vector)))
    out: list = []
    current: list = []

    def pump() -> None:
        while True:
            ev = parser.next_event()
            if ev is NEED_DATA or ev is END_OF_STREAM:
                return
            if isinstance(ev, RequestHead):
                assert not current, "a head inside a request"
                current[:] = [ev, []]
            elif isinstance(ev, bytes):
                assert ev, "an empty data event"
                current[1].append(ev)
            else:
                assert isinstance(ev, EndOfMessage)
                out.append(core_echo(current[0], b"".join(current[1]), ev.trailers))
                current.clear()

    try:
        for data in reads:
            parser.feed(data)
            pump()
        if vector.get("close_request_pipe"):
            parser.feed_eof()
            pump()
    except ProtocolError as e:
        out.append(e)
    return out


def check(vector: dict, got: list) -> None:
    expects = vector["expect"]
    assert len(got) == len(expects), f"got {got!r}; want {len(expects)} results"
    for i, (want, result) in enumerate(zip(expects, got)):
        if "reject" in want:
            r = want["reject"]
            assert isinstance(result, ProtocolError), f"result {i}: got {result!r}; want a parse error {r}"
            assert (result.status, result.type) == (r["status"], r["type"]), f"result {i}: {result}"
        else:
            assert not isinstance(result, Exception), f"result {i}: got {result!r}; want an echo"
            assert vectors.check_echo(want, result) == [], f"result {i}"


@pytest.mark.parametrize("vector", PARSE, ids=vectors.ids(PARSE))
def test_core_one_read(vector: dict) -> None:
    check(vector, run_core(vector, [b"".join(vectors.segments(vector))]))


@pytest.mark.parametrize("vector", PARSE, ids=vectors.ids(PARSE))
def test_core_read_per_segment(vector: dict) -> None:
    check(vector, run_core(vector, vectors.segments(vector)))


class SegmentPipe:
    """A request pipe that returns one segment (or what fits of it) per read, then EOF."""

    def __init__(self, segments: list[bytes]) -> None:
        self.segments = [s for s in segments if s]

    def read(self, n: int) -> bytes:
        if not self.segments:
            return b""
        seg = self.segments[0]
        if len(seg) > n:
            self.segments[0] = seg[n:]
            return seg[:n]
        self.segments.pop(0)
        return seg


@pytest.mark.parametrize("vector", PARSE, ids=vectors.ids(PARSE))
def test_serve_loop(vector: dict) -> None:
    check_served(vector, lambda conn: serve_stream(conn, plain_responder(echo, lambda: None)))


@pytest.mark.parametrize("loop", LOOPS)
@pytest.mark.parametrize("vector", PARSE, ids=vectors.ids(PARSE))
def test_asgi_serve_loop(vector: dict, loop: str) -> None:
    with use_loop(loop):
        adapter = AsgiAdapter(asgi_fixture.app)
        adapter.startup()
        assert loop_kind(adapter.runner.loop) == loop
        try:
            check_served(vector, lambda conn: adapter.serve_lane(conn, ""))
        finally:
            adapter.shutdown()


def check_served(vector: dict, serve) -> None:
    """Serves the vector's request bytes (one segment per read) with ``serve(conn)`` and
    checks the responses against its expectations."""
    out = bytearray()

    def write(data: bytes) -> int:
        out.extend(data)
        return len(data)

    conn = Conn(SegmentPipe(vectors.segments(vector)).read, write,
                RequestParser(*limits_from_env(vectors.env(vector))))
    status = serve(conn)
    rest = bytes(out)
    for i, want in enumerate(vector["expect"]):
        resp, rest = parse_response(rest)
        if "reject" in want:
            r = want["reject"]
            assert resp.status == r["status"], f"response {i}: {resp.status} {resp.body!r}"
            assert resp.json()["type"] == r["type"]
            assert resp.headers.get("afterburn-error") == r["type"]
            assert resp.headers.get("content-type", "").startswith("application/json")
            if "headers" in r:
                assert vectors.compare_fields("header", list(resp.headers), [tuple(p) for p in r["headers"]]) == []
            assert status != 0, "the worker must stop after a framing error (§8.8)"
        else:
            assert resp.status == 200, f"response {i}: {resp.status} {resp.body!r}"
            assert vectors.check_echo(want, json.loads(resp.body)) == [], f"response {i}"
    assert rest == b"", "bytes after the expected responses"
    if "reject" not in vector["expect"][-1]:
        assert status == 0
