"""The fixture's late writers (conformance/README.md, /garbage?when=late|child): after the
answer, a thread or a child process writes a stale response, without AfterBurn-Exchange,
straight to the response pipe (PROTOCOL.md §4.6). Each fixture style, as a real process on
real pipes, as the wire layer runs it."""

from __future__ import annotations

import os
import time

import pytest
from workers import HANDSHAKE, HERE, Worker

STYLES = {
    "launcher": ["-m", "afterburn_runtime", "afterburn_fixture:handle"],
    "script": [str(HERE / "fixture" / "serve_fixture.py")],
    "asgi": ["-m", "afterburn_runtime", "--asgi", "asgi_fixture:app"],
    "wsgi": ["-m", "afterburn_runtime", "--wsgi", "wsgi_fixture:app"],
}
STALE_HEAD = ("HTTP/1.1", "200", "7")


def children(pid: int) -> list[str]:
    """The states of pid's child processes (Linux /proc), zombies included."""
    out = []
    for task in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{task}/children") as f:
                kids = f.read().split()
        except FileNotFoundError:
            continue
        for kid in kids:
            try:
                with open(f"/proc/{kid}/stat") as f:
                    out.append(f.read().rsplit(")", 1)[1].split()[0])
            except FileNotFoundError:
                pass
    return out


@pytest.mark.parametrize("style", STYLES)
@pytest.mark.parametrize("when", ["late", "child"])
def test_stale_response_follows_the_answer(style: str, when: str) -> None:
    # A thread's timer is armed once the answer was written, so with ms=0 the stale bytes
    # come as soon as they can and the answer must still come first, whole. The child is
    # started before the answer (the contract: a process the handler forks while it
    # serves), so it is given time to lose the race.
    ms = 0 if when == "late" else 200
    w = Worker(STYLES[style])
    w.send(HANDSHAKE + f"GET /garbage?when={when}&ms={ms} HTTP/1.1\r\nHost: fn\r\n"
                       "AfterBurn-Exchange: g1\r\n\r\n".encode())
    assert w.response().headers.get("afterburn-capabilities") == "exchange, streams"
    answer = w.response(timeout=10)
    assert (answer.status, answer.json(), answer.headers.get_all("afterburn-exchange")) == (200, {"late": True}, ["g1"])
    stale = w.response(timeout=10)
    assert (stale.status, stale.body, stale.headers.get_all("afterburn-exchange")) == (200, b'"stale"', [])
    assert stale.headers.get("content-length") == "7"
    if when == "child":
        # The child exits after its write and is reaped: no zombie stays (polled, as the
        # reaping thread runs on its own time).
        deadline = time.monotonic() + 10
        while children(w.proc.pid) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert children(w.proc.pid) == []
    # The worker keeps serving; the next exchange has its own token.
    w.send(b"GET /echo HTTP/1.1\r\nHost: fn\r\nAfterBurn-Exchange: g2\r\n\r\n")
    assert w.response(timeout=10).headers.get_all("afterburn-exchange") == ["g2"]
    status, log = w.wait()
    assert (status, w.pending) == (0, b""), log


@pytest.mark.parametrize("when", ["late", "child"])
def test_the_stale_write_waits_ms(when: str) -> None:
    w = Worker(STYLES["launcher"])
    w.handshake()
    started = time.monotonic()
    w.send(f"GET /garbage?when={when}&ms=300 HTTP/1.1\r\nHost: fn\r\n\r\n".encode())
    assert w.response(timeout=10).json() == {"late": True}
    assert w.response(timeout=10).body == b'"stale"'
    assert time.monotonic() - started >= 0.3
    assert w.wait()[0] == 0
