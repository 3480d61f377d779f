"""The worker as a real process on real pipes: descriptors, stdout and stdin protection
(PROTOCOL.md §2.2-§2.4), the launcher, initialisation failure (§9.1) and exit (§9.4)."""

from __future__ import annotations

import os
import signal

import pytest
from workers import HANDSHAKE, HERE, Worker

LAUNCH_PLAIN = ["-m", "afterburn_runtime", "plain_app:handle"]
GET = b"GET /%s HTTP/1.1\r\nHost: fn\r\n\r\n"


@pytest.mark.parametrize("mode", ["fd", "stdio", "legacy"])
def test_fd1_writes_do_not_corrupt_the_response(mode: str) -> None:
    # §2.4: os.write(1, ...), a C printf and print inside a handler land in the logs.
    w = Worker(LAUNCH_PLAIN, mode)
    if mode != "legacy":
        w.handshake()
    w.send(GET % b"fd1" + GET % b"x")
    first = w.response()
    assert (first.status, first.body) == (200, b"clean")
    second = w.response()
    assert (second.status, second.body) == (200, b"hello ")
    w.close_requests()
    assert w.rest() == b""  # nothing but the two responses reached the response pipe
    status, log = w.wait()
    assert status == 0  # §9.4: EOF between requests
    assert "raw write to fd 1" in log and "printf from C" in log and "500 print" in log


@pytest.mark.parametrize("mode", ["stdio", "legacy"])
def test_import_time_banner_is_protected_by_the_launcher(mode: str) -> None:
    w = Worker(LAUNCH_PLAIN, mode, env={"APP_BANNER": "HTTP/1.1 200 banner"})
    w.send(HANDSHAKE + GET % b"x")
    hs = w.response()
    assert hs.headers.get("afterburn-protocol") == "1"  # the first bytes are the reply (§3.3)
    assert w.response().body == b"hello "
    status, log = w.wait()
    assert status == 0
    assert log.count("HTTP/1.1 200 banner") == 2


@pytest.mark.parametrize("mode", ["stdio", "legacy"])
def test_stdin_is_dev_null(mode: str) -> None:
    w = Worker(LAUNCH_PLAIN, mode)
    w.send(HANDSHAKE + GET % b"stdin" + GET % b"x")
    w.response()
    assert w.response().body == b"''"
    assert w.response().body == b"hello "
    assert w.wait()[0] == 0


def test_script_without_launcher_in_stdio_mode() -> None:
    # The import of afterburn_runtime protects what the script prints after it.
    w = Worker([str(HERE / "apps" / "plain_script.py")], "stdio")
    w.send(HANDSHAKE + GET % b"a")
    hs = w.response()
    assert hs.status == 200 and hs.headers.get("afterburn-protocol") == "1"
    resp = w.response()
    assert (resp.status, resp.body) == (200, b"script /a")
    status, log = w.wait()
    assert status == 0
    assert "banner after the import" in log and "print after the import" in log and "NOT HTTP" in log


def test_handler_exception_is_logged_in_one_block_and_serving_goes_on() -> None:
    w = Worker(LAUNCH_PLAIN, "fd")
    w.handshake()
    w.send(b"GET /throw HTTP/1.1\r\nHost: fn\r\nAfterBurn-Request-Id: rid-7\r\n\r\n" + GET % b"x")
    err = w.response()
    assert err.status == 500
    assert err.json() == {"type": "handler_error", "message": "the function failed while handling the request",
                          "request_id": "rid-7"}
    assert b"secret-token-123" not in err.body  # §8.1: never the exception's message
    assert w.response().status == 200
    status, log = w.wait()
    assert status == 0
    assert "[rid-7] afterburn: exception serving GET /throw" in log
    assert "ValueError: secret-token-123" in log


def test_eof_right_after_the_handshake_exits_0() -> None:
    w = Worker(LAUNCH_PLAIN, "fd")
    w.handshake()
    assert w.wait()[0] == 0


def test_eof_inside_a_request_is_a_framing_error() -> None:
    w = Worker(LAUNCH_PLAIN, "fd")
    w.handshake()
    w.send(b"POST /x HTTP/1.1\r\nHost: fn\r\nContent-Length: 10\r\n\r\nabc")
    w.close_requests()
    resp = w.response()
    assert (resp.status, resp.json()["type"]) == (400, "bad_request")
    assert w.rest() == b""  # the response pipe is closed after the error
    assert w.wait()[0] != 0


def test_malformed_request_answered_then_exit_non_zero() -> None:
    w = Worker(LAUNCH_PLAIN, "fd")
    w.handshake()
    w.send(b"GET /x HTTP/1.1\r\nHost: fn\r\nContent-Length: +1\r\n\r\nx" + GET % b"never")
    resp = w.response()
    assert (resp.status, resp.headers.get("afterburn-error")) == (400, "bad_request")
    assert w.rest() == b""  # §8.8: no attempt at the next request
    assert w.wait()[0] != 0


def test_oversized_body_answered_413_before_the_handler() -> None:
    w = Worker(LAUNCH_PLAIN, "fd", env={"AFTERBURN_MAX_BODY_BYTES": "8"})
    w.handshake()
    w.send(b"POST /x HTTP/1.1\r\nHost: fn\r\nContent-Length: 9\r\n\r\n")
    resp = w.response()
    assert (resp.status, resp.json()["type"]) == (413, "body_too_large")
    assert w.wait()[0] != 0


def test_closed_response_pipe_exits_non_zero() -> None:
    w = Worker(LAUNCH_PLAIN, "fd")
    w.handshake()
    os.close(w.resp)
    w.resp = os.open(os.devnull, os.O_RDONLY)  # for wait() to close
    w.send(GET % b"x")
    status, log = w.wait()
    assert status != 0
    assert "response pipe is closed" in log


def test_bad_afterburn_fds_exits_non_zero_with_a_message() -> None:
    w = Worker(LAUNCH_PLAIN, "fd", env={"AFTERBURN_FDS": "3;4"})
    status, log = w.wait()
    assert status != 0
    assert "bad AFTERBURN_FDS" in log


def test_initialisation_failure_exits_non_zero_with_the_traceback() -> None:
    w = Worker(LAUNCH_PLAIN, "fd", env={"APP_INIT_FAIL": "1"})
    w.send(HANDSHAKE)
    assert w.rest() == b""  # never answers the handshake (§9.1)
    status, log = w.wait()
    assert status != 0
    assert "Traceback" in log and "RuntimeError: APP_INIT_FAIL=1" in log


def test_version_mismatch() -> None:
    w = Worker(LAUNCH_PLAIN, "fd")
    w.send(HANDSHAKE.replace(b"Handshake: 1", b"Handshake: 99"))
    resp = w.response()
    assert resp.status == 400
    assert resp.json()["type"] == "version_mismatch"
    assert resp.headers.get("afterburn-protocol") == "1"
    assert w.wait()[0] != 0


def test_sigint_exits_quietly() -> None:
    w = Worker(LAUNCH_PLAIN, "fd")
    w.handshake()
    w.proc.send_signal(signal.SIGINT)
    status, log = w.wait()
    assert status == 130
    assert "Traceback" not in log
