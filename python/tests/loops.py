"""The event loops the library may serve on (issue 30): asyncio's own, and uvloop's when the
opt-in accelerator is installed (``afterburn-runtime[speed]``, which make test-python
installs). Tests parametrized over LOOPS run on each; uvloop's are skipped, saying so, where
it is not installed."""

from __future__ import annotations

import contextlib
import importlib.util
import os

import pytest

from afterburn_runtime import _accel

HAVE_UVLOOP = importlib.util.find_spec("uvloop") is not None
LOOPS = ["asyncio", pytest.param("uvloop", marks=pytest.mark.skipif(not HAVE_UVLOOP, reason="uvloop not installed"))]
# AFTERBURN_PY_ACCEL for each: the standard library only, or the accelerator.
ACCEL = {"asyncio": "off", "uvloop": "on"}


def loop_kind(loop) -> str:
    return "uvloop" if type(loop).__module__.startswith("uvloop") else "asyncio"


@contextlib.contextmanager
def use_loop(kind: str):
    """Every loop the library makes inside is of ``kind`` (AFTERBURN_PY_ACCEL set for it)."""
    saved = os.environ.get("AFTERBURN_PY_ACCEL")
    os.environ["AFTERBURN_PY_ACCEL"] = ACCEL[kind]
    _accel._reset()
    try:
        yield
    finally:
        if saved is None:
            del os.environ["AFTERBURN_PY_ACCEL"]
        else:
            os.environ["AFTERBURN_PY_ACCEL"] = saved
        _accel._reset()
