"""The opt-in accelerator (issue 30, _accel): AFTERBURN_PY_ACCEL chooses between uvloop's
event loop and asyncio's; an accelerator that is missing or fails to load is logged once and
asyncio's loop serves; a fork-mode template keeps asyncio's loop (§2.6); the package's
import loads none of it."""

from __future__ import annotations

import subprocess
import sys
import types

import pytest
from loops import HAVE_UVLOOP, loop_kind

from afterburn_runtime import _accel
from afterburn_runtime._aio import Runner


@pytest.fixture(autouse=True)
def fresh(monkeypatch):
    monkeypatch.delenv("AFTERBURN_PY_ACCEL", raising=False)
    monkeypatch.delenv("AFTERBURN_CONTROL_FD", raising=False)
    # A worker with lanes, where auto wants uvloop; the one-lane tests remove it.
    monkeypatch.setenv("AFTERBURN_STREAM_FDS", "5,6")
    monkeypatch.delenv("AFTERBURN_PY_MAX_LANES", raising=False)
    _accel._reset()
    yield
    _accel._reset()


def loop_of_new_runner() -> str:
    runner = Runner()
    try:
        return loop_kind(runner.loop)
    finally:
        runner.close()


@pytest.mark.parametrize("value,want", [(None, "auto"), ("auto", "auto"), ("off", "off"), (" OFF ", "off"),
                                        ("", "auto"), ("on", "on"), ("On", "on")])
def test_mode(monkeypatch, value, want) -> None:
    if value is not None:
        monkeypatch.setenv("AFTERBURN_PY_ACCEL", value)
    assert _accel.mode() == want


def test_an_unknown_mode_is_logged_once_and_means_off(monkeypatch, capfd) -> None:
    monkeypatch.setenv("AFTERBURN_PY_ACCEL", "turbo")
    assert _accel.mode() == "off"
    assert _accel.mode() == "off"
    err = capfd.readouterr().err
    assert err.count("AFTERBURN_PY_ACCEL='turbo' is not one of auto, on, off") == 1, err


def test_off_keeps_asyncios_loop(monkeypatch, capfd) -> None:
    monkeypatch.setenv("AFTERBURN_PY_ACCEL", "off")
    assert loop_of_new_runner() == "asyncio"
    assert capfd.readouterr().err == ""  # nothing to say: the user asked for it


@pytest.mark.skipif(not HAVE_UVLOOP, reason="uvloop not installed")
def test_auto_uses_uvloop_for_a_worker_with_lanes(capfd) -> None:
    assert loop_of_new_runner() == "uvloop"
    assert _accel.describe().startswith("uvloop ")
    assert capfd.readouterr().err == ""


def test_auto_keeps_asyncios_loop_for_one_lane(monkeypatch, capfd) -> None:
    # Issue 30: with one lane asyncio's loop costs no turn per request, uvloop's one
    # (tests/perf_counts.py --pipes asgi:1: 114k instructions and 2 syscalls against 121k and 3).
    monkeypatch.delenv("AFTERBURN_STREAM_FDS", raising=False)
    assert loop_of_new_runner() == "asyncio"
    assert _accel.describe() in ("none (auto: asyncio's loop for one lane)", "none")
    assert capfd.readouterr().err == ""  # a choice, not a failure: nothing logged


@pytest.mark.parametrize("env,want", [({}, False), ({"AFTERBURN_STREAM_FDS": ""}, False),
                                      ({"AFTERBURN_STREAM_FDS": "5,6"}, True),
                                      ({"AFTERBURN_STREAM_FDS": "5,6", "AFTERBURN_PY_MAX_LANES": "1"}, False),
                                      ({"AFTERBURN_STREAM_FDS": "5,6", "AFTERBURN_PY_MAX_LANES": "2"}, True),
                                      ({"AFTERBURN_STREAM_FDS": "5,6", "AFTERBURN_PY_MAX_LANES": "x"}, True)])
def test_lanes_expected(env, want) -> None:
    assert _accel.lanes_expected(env) is want


@pytest.mark.skipif(not HAVE_UVLOOP, reason="uvloop not installed")
def test_on_uses_uvloop_for_one_lane_too(monkeypatch, capfd) -> None:
    monkeypatch.delenv("AFTERBURN_STREAM_FDS", raising=False)
    monkeypatch.setenv("AFTERBURN_PY_ACCEL", "on")
    assert loop_of_new_runner() == "uvloop"
    assert capfd.readouterr().err == ""


@pytest.mark.skipif(not HAVE_UVLOOP, reason="uvloop not installed")
def test_a_template_keeps_asyncios_loop(monkeypatch) -> None:
    # §2.6: its workers each need a loop of their own, which only a selector loop can be
    # given after the fork (_aio.renew_after_fork).
    monkeypatch.setenv("AFTERBURN_CONTROL_FD", "5")
    assert loop_of_new_runner() == "asyncio"


def test_a_missing_accelerator_is_logged_once(monkeypatch, capfd) -> None:
    monkeypatch.setitem(sys.modules, "uvloop", None)  # import uvloop raises ImportError
    assert loop_of_new_runner() == "asyncio"
    assert loop_of_new_runner() == "asyncio"
    err = capfd.readouterr().err
    assert err.count("accelerator uvloop is not installed") == 1, err


def test_an_accelerator_that_fails_to_load_is_logged_once(monkeypatch, capfd) -> None:
    broken = types.ModuleType("uvloop")  # no new_event_loop: a broken install

    monkeypatch.setitem(sys.modules, "uvloop", broken)
    assert loop_of_new_runner() == "asyncio"
    assert loop_of_new_runner() == "asyncio"
    err = capfd.readouterr().err
    assert err.count("accelerator uvloop failed to load") == 1, err


def test_an_accelerator_that_fails_to_make_a_loop_is_logged_once(monkeypatch, capfd) -> None:
    def fail():
        raise OSError("no loop today")

    monkeypatch.setitem(sys.modules, "uvloop", types.SimpleNamespace(new_event_loop=fail))
    assert loop_of_new_runner() == "asyncio"
    assert loop_of_new_runner() == "asyncio"
    err = capfd.readouterr().err
    assert err.count("accelerator uvloop failed to make a loop") == 1, err


def test_the_package_import_loads_no_accelerator() -> None:
    code = ("import sys, afterburn_runtime; "
            "print(sorted(m for m in ('uvloop', 'asyncio', 'afterburn_runtime._accel') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
