"""AFTERBURN_LOG_FORMAT (conformance contract C): req.log, req.logger and RequestIdFilter
write ``[request-id] message`` in text mode (the default) and one JSON object per line,
``{"request_id", "level", "msg"}``, in json mode."""

from __future__ import annotations

import json
import logging

import pytest
from workers import HANDSHAKE, Worker

from afterburn_runtime import RequestIdFilter, _logline
from afterburn_runtime.testing import call


@pytest.fixture
def log_format(monkeypatch):
    def set_format(value: str | None) -> None:
        if value is None:
            monkeypatch.delenv("AFTERBURN_LOG_FORMAT", raising=False)
        else:
            monkeypatch.setenv("AFTERBURN_LOG_FORMAT", value)
        monkeypatch.setattr(_logline, "_json", None)  # read again

    return set_format


@pytest.fixture
def handler_stream():
    """A logging handler formatting "%(message)s" with RequestIdFilter, on the root logger."""
    import io

    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.addFilter(RequestIdFilter())
    handler.setFormatter(logging.Formatter("%(message)s"))
    root = logging.getLogger()
    root.addHandler(handler)
    old_level = root.level
    root.setLevel(logging.INFO)
    yield stream
    root.removeHandler(handler)
    root.setLevel(old_level)


def _lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line]


@pytest.mark.parametrize("value", [None, "text"])
def test_text_mode_keeps_the_bracketed_request_id(value, log_format, capfd) -> None:
    log_format(value)
    call(lambda req: req.log("hello"), request_id="rid-t")
    assert "[rid-t] hello" in _lines(capfd.readouterr().err)


def test_req_log_writes_a_json_line(log_format, capfd) -> None:
    log_format("json")
    call(lambda req: req.log('two\nlines "quoted" ünï'), request_id="rid-j")
    (line,) = [x for x in _lines(capfd.readouterr().err) if "rid-j" in x]
    assert json.loads(line) == {"request_id": "rid-j", "msg": 'two\nlines "quoted" ünï'}


def test_req_logger_writes_json_with_its_level_and_traceback(log_format, handler_stream) -> None:
    log_format("json")

    def handler(req):
        req.logger.info("took %d ms", 12)
        try:
            raise ValueError("boom")
        except ValueError:
            req.logger.exception("failed")
        return "ok"

    call(handler, request_id="rid-l")
    first, second = (json.loads(x) for x in _lines(handler_stream.getvalue()))
    assert first == {"request_id": "rid-l", "level": "info", "msg": "took 12 ms"}
    assert (second["request_id"], second["level"]) == ("rid-l", "error")
    assert second["msg"].startswith("failed\nTraceback") and "ValueError: boom" in second["msg"]


def test_request_id_filter_turns_any_record_into_a_json_line(log_format, handler_stream) -> None:
    log_format("json")

    def handler(req):
        logging.getLogger("some.driver").warning("slow query %s", "q1")
        return "ok"

    call(handler, request_id="rid-f")
    logging.getLogger("outside").warning("between requests")
    inside, outside = (json.loads(x) for x in _lines(handler_stream.getvalue()))
    assert inside == {"request_id": "rid-f", "level": "warning", "msg": "slow query q1"}
    assert outside == {"level": "warning", "msg": "between requests"}  # no request, no id


def test_request_id_filter_in_text_mode_only_sets_the_attribute(log_format, handler_stream) -> None:
    log_format("text")
    call(lambda req: req.logger.info("plain"), request_id="rid-p")
    assert _lines(handler_stream.getvalue()) == ["[rid-p] plain"]


def test_the_fixture_logs_json_under_a_real_worker() -> None:
    w = Worker(["-m", "afterburn_runtime", "afterburn_fixture:handle"], env={"AFTERBURN_LOG_FORMAT": "json"})
    w.send(HANDSHAKE)
    assert w.response(timeout=30).status == 200
    w.send(b"GET /log?text=from%20the%20fixture HTTP/1.1\r\nHost: fn\r\nAfterBurn-Request-Id: rid-w\r\n\r\n")
    assert w.response(timeout=10).json() == {"logged": True}
    status, log = w.wait()
    assert status == 0
    assert {"request_id": "rid-w", "msg": "from the fixture"} in [json.loads(x) for x in _lines(log)
                                                                  if x.startswith("{")]


def test_the_librarys_own_lines_about_a_request_are_json_too(log_format, capfd) -> None:
    log_format("json")

    def handler(req):
        raise RuntimeError("boom")

    assert call(handler, request_id="rid-x").status == 500
    lines = [json.loads(x) for x in _lines(capfd.readouterr().err) if x.startswith("{")]
    (record,) = [x for x in lines if x.get("request_id") == "rid-x"]
    assert record["level"] == "error"
    assert record["msg"].startswith("afterburn: exception serving GET /\nTraceback")
    assert record["msg"].endswith("RuntimeError: boom")


def test_the_librarys_own_lines_keep_their_text_format(log_format, capfd) -> None:
    log_format(None)
    call(lambda req: 1 / 0, request_id="rid-y")
    assert "[rid-y] afterburn: exception serving GET /" in capfd.readouterr().err
