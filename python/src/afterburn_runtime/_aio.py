"""The asyncio runner, for async handlers and ASGI apps only.

asyncio costs tens of milliseconds of start-up, so it is imported here, when the first
async handler, async body or ASGI app needs it, and never by ``import afterburn_runtime``.
The worker carries one exchange at a time (PROTOCOL.md §2.1): one event loop lives as
long as the worker and runs each exchange to completion.
"""

from __future__ import annotations

import asyncio

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Coroutine
    from typing import Any


class Runner:
    """One event loop for the life of the worker."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        asyncio.set_event_loop(self.loop)
        _live.append(self)

    def run(self, coro: Coroutine[Any, Any, Any]) -> Any:
        return self.loop.run_until_complete(coro)

    def close(self) -> None:
        try:
            self.loop.run_until_complete(self.loop.shutdown_asyncgens())
        finally:
            asyncio.set_event_loop(None)
            self.loop.close()
            if self in _live:
                _live.remove(self)


# The runners alive in this process: a worker forked from a template gives each loop a
# selector of its own (renew_after_fork).
_live: list[Runner] = []


# What renew_after_fork uses of asyncio's selector loops. No public API gives a loop a new
# selector and self-pipe, so these private attributes are what it leans on; a template whose
# live loop lacks any of them refuses to fork (unrenewable), and the watchdog starts
# workers the exec way (§2.6).
_RENEWED = ("_selector", "_make_self_pipe", "_close_self_pipe", "_ssock", "_csock")


def unrenewable() -> str | None:
    """Why a live loop could not be given its own selector in a forked worker, or None."""
    for runner in _live:
        loop = runner.loop
        if loop.is_closed():
            continue
        missing = [name for name in _RENEWED if not hasattr(loop, name)]
        if missing:
            return (f"the asyncio loop {type(loop).__name__} has no {', '.join(missing)}: a forked "
                    "worker could not have an event loop of its own; start workers the exec way")
    return None


def renew_after_fork() -> list[int]:
    """In a worker forked from a template (PROTOCOL.md §2.6): a fork shares the template's
    epoll instance and self-pipe with every other worker, so that one worker's readiness
    events could wake another. Give each live loop its own selector and self-pipe; the
    template's copies are closed in this process only (a close, never an ``epoll_ctl``,
    which would change the template's instance). Registrations the template had are
    dropped: their descriptors are the template's, and a worker closes those. Returns the
    new descriptors, which the worker keeps."""
    import selectors

    keep: list[int] = []
    for runner in _live:
        loop = runner.loop
        if loop.is_closed():
            continue
        if unrenewable() is not None:  # the template checked before forking
            raise RuntimeError(unrenewable())
        old = loop._selector  # type: ignore[attr-defined]
        old.close()  # closes the epoll descriptor; no deregistration
        loop._selector = selectors.DefaultSelector()  # type: ignore[attr-defined]
        loop._close_self_pipe()  # type: ignore[attr-defined]  # not registered in the new selector: closes only
        loop._make_self_pipe()  # type: ignore[attr-defined]
        keep.append(loop._selector.fileno())  # type: ignore[attr-defined]
        keep += [loop._ssock.fileno(), loop._csock.fileno()]  # type: ignore[attr-defined]
    return keep
