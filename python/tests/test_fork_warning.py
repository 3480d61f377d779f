"""Python 3.12+ warns in os.fork() when the process has more than one OS thread (its count
comes from /proc/self/stat, so NumPy's OpenBLAS pool counts). The template forks only once
the fork-safety rule has judged the fork safe (PROTOCOL.md §2.6), so it silences exactly
that warning around its own forks. Only Python 3.11 runs here: os.fork is replaced by one
that warns as 3.12 does (fork_app's FORK_APP_PY312_WARNING)."""

from __future__ import annotations

import ctypes
import os
import warnings

import pytest
from test_fork import Template

import afterburn_runtime._template as template

PR_SET_CHILD_SUBREAPER = 36
PY312 = "This process (pid=123) is multi-threaded, use of fork() may lead to deadlocks in the child."


@pytest.fixture(scope="module", autouse=True)
def subreaper():
    libc = ctypes.CDLL(None, use_errno=True)
    assert libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0, os.strerror(ctypes.get_errno())
    yield
    libc.prctl(PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0)


def _fake_fork(*messages: str):
    def fork() -> int:
        for m in messages:
            warnings.warn(m, DeprecationWarning, stacklevel=2)
        return 4242
    return fork


def test_the_threads_warning_is_silenced_around_the_templates_fork(monkeypatch) -> None:
    monkeypatch.setattr(template, "fork", _fake_fork(PY312))
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        assert template._fork() == 4242
        with pytest.raises(DeprecationWarning, match="multi-threaded"):
            warnings.warn(PY312, DeprecationWarning)  # elsewhere it still counts


@pytest.mark.parametrize("message, category", [
    ("something else is deprecated", DeprecationWarning),
    (PY312, RuntimeWarning),  # the same text in another category is not the one silenced
])
def test_other_warnings_pass(monkeypatch, message: str, category: type[Warning]) -> None:
    def fork() -> int:
        warnings.warn(message, category, stacklevel=2)
        return 4242

    monkeypatch.setattr(template, "fork", fork)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(category):
            template._fork()


@pytest.mark.parametrize("filters", ["error::DeprecationWarning", "always::DeprecationWarning"])
def test_a_template_forks_past_the_warning_under_any_filter(filters: str) -> None:
    t = Template(env={"FORK_APP_PY312_WARNING": "1", "PYTHONWARNINGS": filters})
    t.handshake()
    reply, w = t.fork(1)
    assert w is not None, reply
    w.handshake()
    assert w.info()["worker_id"] == "1"
    assert w.wait()[0] == 0
    status, log = t.close()
    assert status == 0, log
    assert "multi-threaded" not in log


def test_a_template_still_shows_other_deprecation_warnings() -> None:
    t = Template(env={"FORK_APP_PY312_WARNING": "other", "PYTHONWARNINGS": "always::DeprecationWarning"})
    t.handshake()
    reply, w = t.fork(1)
    assert w is not None, reply
    w.handshake()
    assert w.wait()[0] == 0
    status, log = t.close()
    assert status == 0, log
    assert "DeprecationWarning: fork_app: some other deprecation" in log
    assert "multi-threaded" not in log
