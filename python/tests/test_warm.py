"""The warm-up of a worker forked for one request (PROTOCOL.md §2.7 "Warm spares",
afterburn_runtime._warm): the library's own path, never the function, nothing left behind."""

from __future__ import annotations

import pytest

from afterburn_runtime import _warm
from afterburn_runtime._exchange import CURRENT


def test_warm_up_runs_the_librarys_path_to_a_complete_response(capfd) -> None:
    out = _warm.warm_up()
    # Parsed, dispatched, the body read and echoed, the response framed: the whole path.
    assert out == b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 4\r\n\r\nwarm"
    assert _warm.warmed is True
    assert CURRENT.get() == "-"  # no request id left current (RequestIdFilter)
    captured = capfd.readouterr()
    assert captured.out == "" and captured.err == ""  # nothing logged


def test_warm_up_that_fails_is_logged_and_the_worker_serves_cold(monkeypatch, capfd) -> None:
    monkeypatch.setattr(_warm, "warmed", False)

    def broken(*args, **kwargs):
        raise OSError("no room")

    monkeypatch.setattr(_warm, "exchange_in_memory", broken)
    assert _warm.warm_up() == b""  # no exception: the worker goes on to its handshake
    assert _warm.warmed is False
    err = capfd.readouterr().err
    assert "warming up failed" in err and "no room" in err, err


if __name__ == "__main__":
    pytest.main([__file__])
