"""The asyncio runner, for async handlers and ASGI apps only.

asyncio costs tens of milliseconds of start-up, so it is imported here, when the first
async handler, async body or ASGI app needs it, and never by ``import afterburn_runtime``.
With one lane (PROTOCOL.md §2.1) one event loop lives as long as the worker and runs each
exchange to completion on the main thread. With lanes (§2.5) the same loop runs for good on
a thread of its own, and each lane's thread hands it its exchange as a task: the tasks of
all lanes run concurrently on the one loop, while each lane's pipe I/O stays on its own
thread (``lane_call``), so a full response pipe or a slow request body stalls its own
exchange and never the loop.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import queue
import threading

from . import _accel, _alarm
from ._cancel import GRACE

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Coroutine
    from typing import Any

    from ._cancel import Cancellation
    from ._request import Request

# How long after the deadline the library itself cancels a task (_cancel.GRACE). The
# watchdog's clock decides (§5.2: the library's deadline may fall up to a millisecond before
# the watchdog's): it answers 504 and, with lanes, writes the cancel line (§2.5). Were the
# library first, a task cancelled mid-response would end its lane as a fault before the
# watchdog's deadline, and the client's 504 would be a 502 or a cut response.
DEADLINE_GRACE = GRACE


class _LaneIO:
    """Where a task's pipe I/O goes: the inbox its lane's thread serves while the task runs."""

    __slots__ = ("inbox", "loop", "open")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.inbox: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self.loop = loop
        self.open = True  # False once the exchange's task has ended (set on the loop's thread)


# The pipe I/O of the lane whose task this is. Unset with one lane.
_lane_io: contextvars.ContextVar[_LaneIO | None] = contextvars.ContextVar("afterburn_lane_io", default=None)
_DONE = object()


async def lane_call(fn: Callable[..., Any], *args: Any) -> Any:
    """Calls ``fn(*args)``, a blocking read or write of the exchange's pipes, on the lane's
    own thread and waits for it without blocking the loop (§2.5); with one lane, directly.
    A task the app left running after its exchange ended calls directly too: the lane's
    thread no longer serves it, and waiting for it would never end."""
    io = _lane_io.get()
    if io is None or not io.open:
        return fn(*args)
    waiter = io.loop.create_future()
    io.inbox.put((fn, args, waiter))
    return await waiter


async def _until_cancelled(coro: Coroutine[Any, Any, Any], cancellation: Cancellation,
                           loop: asyncio.AbstractEventLoop) -> Any:
    """Awaits coro in the current task of ``loop`` (the running one), which the exchange's
    cancellation cancels: the cancel pipe (``set_callback``, with lanes) or the loop's timer
    at the deadline + GRACE. (The loop is given: asyncio.get_running_loop() costs a getpid
    system call.)"""
    task = asyncio.current_task(loop)
    assert task is not None
    cancellation.set_callback(lambda: loop.call_soon_threadsafe(task.cancel))
    timer = None if cancellation.deadline is None else loop.call_at(
        cancellation.deadline + DEADLINE_GRACE, cancellation.fire)
    try:
        return await coro
    finally:
        cancellation.set_callback(None)
        if timer is not None:
            timer.cancel()


def _settle(waiter: asyncio.Future[Any], result: Any, error: BaseException | None) -> None:
    if waiter.done():
        return  # the task was cancelled while the lane did the call
    if error is not None:
        waiter.set_exception(error)
    else:
        waiter.set_result(result)


class Runner:
    """One event loop for the life of the worker."""

    def __init__(self) -> None:
        # uvloop's with the opt-in accelerator (_accel), else asyncio's.
        self.loop = _accel.new_event_loop()
        asyncio.set_event_loop(self.loop)
        self.thread: threading.Thread | None = None
        _live.append(self)

    def run(self, coro: Coroutine[Any, Any, Any], req: Request | None = None) -> Any:
        """Runs coro to its end and returns its result, as a task cancelled when ``req``'s
        exchange is (its deadline, §2.5; with lanes the cancel pipe too): with one lane on
        this thread, with lanes on the loop's thread. A task that ends cancelled raises
        concurrent.futures.CancelledError here."""
        cancellation = None if req is None else req.cancellation
        if self.thread is None:
            return self._run_here(coro, cancellation)
        return self._run_from_lane(coro, cancellation)

    def _run_here(self, coro: Coroutine[Any, Any, Any], cancellation: Cancellation | None) -> Any:
        """One lane (§2.1): the loop runs on this, the main, thread until coro ends. The
        deadline alarm of a synchronous handler (_alarm) is paused meanwhile: its exception
        raised inside the loop's machinery would wreck the loop; the task is cancelled by
        the loop's own timer instead."""
        armed = _alarm.current()
        if armed is not None:
            armed.paused += 1
        try:
            if cancellation is None:
                return self.loop.run_until_complete(coro)
            return self.loop.run_until_complete(_until_cancelled(coro, cancellation, self.loop))
        except asyncio.CancelledError:
            # As with lanes (future.result()): an Exception, which the exchange answers.
            raise concurrent.futures.CancelledError() from None
        finally:
            if armed is not None:
                armed.paused -= 1

    def start_thread(self) -> None:
        """§2.5: the loop runs on a thread of its own from now on, until close()."""
        if self.thread is None:
            self.thread = threading.Thread(target=self._forever, name="afterburn-loop", daemon=True)
            self.thread.start()

    def _forever(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_forever()

    def _run_from_lane(self, coro: Coroutine[Any, Any, Any], cancellation: Cancellation | None) -> Any:
        """Runs coro as a task on the loop and, while it runs, does the pipe I/O it asks
        for (lane_call) on this, the lane's, thread. The exchange's cancellation, from the
        cancel pipe or at the deadline, cancels the task; a task that ends cancelled
        raises concurrent.futures.CancelledError here."""
        loop = self.loop
        io = _LaneIO(loop)
        inbox = io.inbox

        async def main() -> Any:
            _lane_io.set(io)
            if cancellation is None:
                return await coro
            return await _until_cancelled(coro, cancellation, loop)

        def ended(_: Any) -> None:  # on the loop's thread, where lane_call reads io.open
            io.open = False
            inbox.put(_DONE)

        tasks: list[asyncio.Task[Any]] = []

        def start() -> None:
            # On the loop's thread, in a copy of this thread's context (the request id), as
            # run_coroutine_threadsafe would, without its concurrent Future, chained
            # callbacks and lock: the task itself is read once it has ended.
            task = loop.create_task(main())
            task.add_done_callback(ended)
            tasks.append(task)

        loop.call_soon_threadsafe(start)
        while True:
            item = inbox.get()
            if item is _DONE:
                try:
                    return tasks[0].result()  # ended: the put and get order it after the task
                except asyncio.CancelledError:
                    raise concurrent.futures.CancelledError() from None
            fn, args, waiter = item
            try:
                result, error = fn(*args), None
            except BaseException as e:  # handed to the task, which raises it
                result, error = None, e
            loop.call_soon_threadsafe(_settle, waiter, result, error)

    def close(self) -> None:
        if self.thread is not None:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join()
            self.thread = None
            asyncio.set_event_loop(self.loop)
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
