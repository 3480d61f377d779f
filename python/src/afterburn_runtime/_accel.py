"""Opt-in accelerators (issue 30): uvloop's event loop for ASGI apps and async handlers.

The library needs the standard library only. ``pip install 'afterburn-runtime[speed]'``
adds uvloop, which then makes the event loop of a worker that serves lanes (PROTOCOL.md
§2.5). An accelerator that is not installed, or that fails to load, is logged once (the
first time a loop is made) and asyncio's own loop serves; nothing else changes, and every
conformance vector passes on both paths.

    AFTERBURN_PY_ACCEL=auto   (the default) uvloop when the worker has lanes and it is
                              installed and loads; asyncio's loop for one lane
    AFTERBURN_PY_ACCEL=on     uvloop for every loop, one lane too, when it loads
    AFTERBURN_PY_ACCEL=off    the standard library only, nothing logged

Why ``auto`` leaves one lane to asyncio (issue 30, tests/perf_counts.py --pipes, the ASGI
adapter serving the benchmark's hello app, instructions and system calls per request of the
whole worker): with one lane the stream is one task whose app calls are awaited in it
(``_asgi``), and asyncio's loop shows that nothing else is ready, so a request costs no turn
of the loop: 112k instructions and 2 system calls on asyncio's loop against 121k and 3 on
uvloop's (whose ready queue cannot be seen, so every request ends with a turn, an
epoll_pwait). With lanes every request is hand-offs between the lane's thread and the loop's
thread, where uvloop's native loop is the cheaper: 4 lanes 193k instructions against 239k,
8 lanes 193k against 227k.

Two places keep asyncio's loop whatever the setting: a fork-mode template (PROTOCOL.md
§2.6), whose workers each need a loop of their own after the fork (``_aio.renew_after_fork``
gives a selector loop a new selector; libuv's loop has no such renewal from Python), and any
process where uvloop's import fails.

Request parsing stays the library's own (``_parser``): httptools (llhttp) is not used. The
strict checks of PROTOCOL.md §4.3 (RESEARCH.md §3) would have to run on every head beside
it, and the pure parser, whose checks are cached per field line, costs a small part of an
exchange (tests/perf_counts.py counts it).
"""

from __future__ import annotations

import os

from ._state import log

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

MODES = ("auto", "on", "off")

# What was decided, once per process (empty until the first loop is made): uvloop's loop
# factory, or None for asyncio's.
_loop_factory: list[Any] = []
_logged: set[str] = set()


def mode(environ: dict[str, str] | os._Environ[str] = os.environ) -> str:
    """AFTERBURN_PY_ACCEL: ``auto`` (the default), ``on`` or ``off``. Another value is logged
    once and read as ``off``: the standard library's path always serves."""
    value = environ.get("AFTERBURN_PY_ACCEL", "auto").strip().lower() or "auto"
    if value not in MODES:
        _log_once("mode", f"afterburn: AFTERBURN_PY_ACCEL={value!r} is not one of {', '.join(MODES)}; "
                  "using the standard library only")
        return "off"
    return value


def _log_once(key: str, message: str) -> None:
    if key not in _logged:
        _logged.add(key)
        log(message)


def lanes_expected(environ: dict[str, str] | os._Environ[str] = os.environ) -> bool:
    """Whether this worker will serve lanes (§2.5): the watchdog gave it more than one
    (AFTERBURN_STREAM_FDS) and AFTERBURN_PY_MAX_LANES does not hold it to one. Read from the
    environment, since the loop is made before the serve loop looks at its lanes (an ASGI
    app's lifespan starts before the handshake)."""
    if not environ.get("AFTERBURN_STREAM_FDS"):
        return False
    cap = environ.get("AFTERBURN_PY_MAX_LANES", "").strip()
    return not (cap.isdigit() and cap.isascii() and int(cap) <= 1)


def _uvloop_factory() -> Any:
    """uvloop's loop class, or None (logged once why, when it was wanted)."""
    chosen = mode()
    if chosen == "off" or chosen == "auto" and not lanes_expected():
        return None
    if os.environ.get("AFTERBURN_CONTROL_FD") is not None:
        # §2.6: a template's loop is inherited by every worker it forks, and only a selector
        # loop can be given a selector of its own there (_aio.renew_after_fork).
        return None
    try:
        import uvloop

        return uvloop.new_event_loop
    except ImportError:
        _log_once("uvloop", "afterburn: accelerator uvloop is not installed "
                  "(pip install 'afterburn-runtime[speed]'); asyncio's own event loop serves")
        return None
    except Exception as e:  # a broken install: a missing symbol, a wrong platform
        _log_once("uvloop", f"afterburn: accelerator uvloop failed to load ({e!r}); asyncio's own event loop serves")
        return None


def new_event_loop() -> Any:
    """A new event loop: uvloop's when it is enabled and loads, else asyncio's."""
    if not _loop_factory:
        _loop_factory.append(_uvloop_factory())
    factory = _loop_factory[0]
    if factory is not None:
        try:
            return factory()
        except Exception as e:
            _log_once("uvloop-new", f"afterburn: accelerator uvloop failed to make a loop ({e!r}); "
                      "asyncio's own event loop serves")
            _loop_factory[0] = None
    import asyncio

    return asyncio.new_event_loop()


def describe() -> str:
    """What serves, for tests/perf_counts.py and logs: ``uvloop 0.23.0`` or ``none``."""
    factory = _uvloop_factory()
    if factory is None:
        return "none" if mode() != "auto" or lanes_expected() else "none (auto: asyncio's loop for one lane)"
    from importlib.metadata import version

    return f"uvloop {version('uvloop')}"


def _reset() -> None:
    """Forget the decision (tests: another AFTERBURN_PY_ACCEL)."""
    _loop_factory.clear()
    _logged.clear()
