"""The lanes' shortcuts on the event loop (PROTOCOL.md §2.5, issue 30): Conn.send_now writes
a response from the loop only when the lane's response pipe cannot block it (empty, and the
response fits), and Conn.body_ready says when a body's next piece is held without a read.
Anything else goes to the lane's thread, as before."""

from __future__ import annotations

import os

import pytest

from afterburn_runtime._conn import Conn
from afterburn_runtime._exchange import open_conn
from afterburn_runtime._parser import DEFAULT_MAX_HEAD, RequestParser


@pytest.fixture
def pipes():
    rq_r, rq_w = os.pipe()
    rs_r, rs_w = os.pipe()
    conn = open_conn(rq_r, rs_w, (DEFAULT_MAX_HEAD, 0))
    yield conn, rq_w, rs_r, rs_w
    for fd in (rq_r, rq_w, rs_r, rs_w):
        os.close(fd)


def test_an_empty_pipe_takes_a_response_that_fits(pipes) -> None:
    conn, _, rs_r, _ = pipes
    assert conn.send_now([b"HTTP/1.1 200 OK\r\n", b"Content-Length: 0\r\n\r\n"]) is True
    assert os.read(rs_r, 1 << 16) == b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"


def test_a_pipe_that_holds_unread_bytes_is_left_to_the_lane(pipes) -> None:
    conn, _, rs_r, rs_w = pipes
    os.write(rs_w, b"x")  # the watchdog has not read everything yet: the write could block
    assert conn.send_now([b"y"]) is False
    assert os.read(rs_r, 10) == b"x"  # nothing written


def test_a_response_larger_than_the_pipe_is_left_to_the_lane(pipes) -> None:
    conn, _, rs_r, rs_w = pipes
    import fcntl

    size = fcntl.fcntl(rs_w, fcntl.F_GETPIPE_SZ)
    assert conn.send_now([b"z" * (size + 1)]) is False
    assert conn.send_now([b"z" * size]) is True
    assert len(os.read(rs_r, size + 1)) == size


def test_no_descriptor_or_no_pipe_never_writes(tmp_path) -> None:
    written = []
    assert Conn(lambda n: b"", written.append, RequestParser()).send_now([b"a"]) is False
    fd = os.open(tmp_path / "f", os.O_WRONLY | os.O_CREAT)
    try:
        conn = Conn(lambda n: b"", lambda d: os.write(fd, d), RequestParser(), fd)
        assert conn.send_now([b"a"]) is False
        assert os.path.getsize(tmp_path / "f") == 0
    finally:
        os.close(fd)


@pytest.mark.parametrize("raw,ready", [
    (b"POST / HTTP/1.1\r\nHost: fn\r\nContent-Length: 3\r\n\r\nabc", True),  # held with its head
    (b"POST / HTTP/1.1\r\nHost: fn\r\nContent-Length: 3\r\n\r\n", False),  # still to come
    (b"POST / HTTP/1.1\r\nHost: fn\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n", False),  # chunked: the lane
    (b"GET / HTTP/1.1\r\nHost: fn\r\n\r\n", True),  # no body: its end is held
])
def test_body_ready(pipes, raw, ready) -> None:
    conn, rq_w, _, _ = pipes
    os.write(rq_w, raw)
    head = conn.event()
    conn.begin(None, head.has_body)
    assert conn.body_ready() is ready
