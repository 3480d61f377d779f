"""The ASGI adapter with one lane (issue 30): the whole request stream is one task on the
event loop (AsgiAdapter.serve_lane), and each app call is awaited in it. What a task of its
own per exchange gave the app must stay: work it leaves ready runs before the next request,
a deadline cancels only its own exchange, http.disconnect comes once the response is over.
Run on every loop the library may use (asyncio's, and uvloop's when installed)."""

from __future__ import annotations

import asyncio
import sys

import pytest
from loops import LOOPS, loop_kind, use_loop

from afterburn_runtime._asgi import AsgiAdapter
from afterburn_runtime._conn import Conn
from afterburn_runtime._parser import RequestParser
from afterburn_runtime.testing import parse_response

pytestmark = pytest.mark.parametrize("loop", LOOPS)


def request(path: str, timeout_ms: int | None = None, body: bytes = b"") -> bytes:
    extra = f"AfterBurn-Timeout-Ms: {timeout_ms}\r\n" if timeout_ms is not None else ""
    return (f"POST {path} HTTP/1.1\r\nHost: fn\r\n{extra}Content-Length: {len(body)}\r\n\r\n").encode() + body


def serve(app, requests: list[bytes], loop: str) -> tuple[int, list]:
    """Serves the requests (one per read) through serve_lane; returns its status and the
    parsed responses."""
    adapter = AsgiAdapter(app)
    adapter.startup()
    assert loop_kind(adapter.runner.loop) == loop
    pending = requests[::-1]
    out = bytearray()

    def write(data) -> int:
        out.extend(data)
        return len(data)

    conn = Conn(lambda n: pending.pop() if pending else b"", write, RequestParser())
    try:
        status = adapter.serve_lane(conn, "")
    finally:
        adapter.shutdown()
    responses, rest = [], bytes(out)
    while rest:
        resp, rest = parse_response(rest)
        responses.append(resp)
    return status, responses


async def answer(send, body: bytes, status: int = 200) -> None:
    await send({"type": "http.response.start", "status": status, "headers": [(b"content-type", b"text/plain")]})
    await send({"type": "http.response.body", "body": body})


def test_work_the_app_leaves_ready_runs_before_the_next_request(loop: str) -> None:
    ran: list[str] = []

    async def note(path: str) -> None:
        ran.append(path)

    async def app(scope, receive, send):
        if scope["type"] != "http":
            raise RuntimeError("no lifespan")
        asyncio.get_running_loop().create_task(note(scope["path"]))  # never awaited
        await answer(send, ",".join(ran).encode())

    with use_loop(loop):
        status, responses = serve(app, [request("/a"), request("/b"), request("/c")], loop)
    assert status == 0
    assert [r.body for r in responses] == [b"", b"/a", b"/a,/b"]


def test_a_deadline_cancels_its_exchange_only(loop: str) -> None:
    async def app(scope, receive, send):
        if scope["type"] != "http":
            raise RuntimeError("no lifespan")
        if scope["path"] == "/slow":
            await asyncio.sleep(10)
        task = asyncio.current_task()
        cancelling = task.cancelling() if hasattr(task, "cancelling") else 0
        if sys.version_info >= (3, 11):
            try:
                async with asyncio.timeout(0.01):
                    await asyncio.sleep(1)
                outcome = "no timeout"
            except TimeoutError:
                outcome = "timeout"  # not a CancelledError left over from /slow
        else:
            outcome = "timeout"
        await answer(send, f"{outcome} {cancelling}".encode())

    with use_loop(loop):
        status, responses = serve(app, [request("/slow", timeout_ms=50), request("/next", timeout_ms=5000),
                                         request("/last")], loop)
    assert status == 0
    assert responses[0].status == 500 and responses[0].json()["type"] == "handler_error"
    assert [(r.status, r.body) for r in responses[1:]] == [(200, b"timeout 0"), (200, b"timeout 0")]


def test_disconnect_comes_once_the_response_is_over(loop: str) -> None:
    seen: list[str] = []

    async def app(scope, receive, send):
        if scope["type"] != "http":
            raise RuntimeError("no lifespan")
        first = await receive()
        before = len(seen)

        async def listen() -> None:
            seen.append((await receive())["type"])

        listener = asyncio.get_running_loop().create_task(listen())
        await asyncio.sleep(0)
        assert len(seen) == before  # still waiting: the response has not ended
        await answer(send, first["body"])
        await listener

    with use_loop(loop):
        status, responses = serve(app, [request("/", body=b"hi"), request("/", body=b"again")], loop)
    assert status == 0
    assert [r.body for r in responses] == [b"hi", b"again"]
    assert seen == ["http.disconnect", "http.disconnect"]


def test_an_app_that_never_waits_costs_no_turn_of_the_loop(loop: str) -> None:
    if loop != "asyncio":
        pytest.skip("uvloop's turns are native code, not counted")
    turns = []

    async def app(scope, receive, send):
        if scope["type"] != "http":
            raise RuntimeError("no lifespan")
        body = (await receive())["body"]
        await answer(send, body)

    with use_loop(loop):
        adapter = AsgiAdapter(app)
        adapter.startup()
        real = adapter.runner.loop._run_once

        def counted() -> None:
            turns.append(1)
            real()

        adapter.runner.loop._run_once = counted
        pending = [request("/", body=b"x%d" % i) for i in range(50)][::-1]
        out = bytearray()
        conn = Conn(lambda n: pending.pop() if pending else b"", lambda d: out.extend(d) or len(d), RequestParser())
        assert adapter.serve_lane(conn, "") == 0
        served = len(turns)
        adapter.shutdown()
    # run_until_complete's own start and end: a turn or two for the whole stream of 50.
    assert served <= 2, served
    assert out.count(b"HTTP/1.1 200 OK") == 50
