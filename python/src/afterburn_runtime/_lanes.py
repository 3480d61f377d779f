"""Lanes: several exchanges at once in one worker (PROTOCOL.md §2.5, capability `streams`).

Each lane is a pair of pipes carrying an AfterBurn/1 keep-alive stream of its own, served
exactly as the single lane is (``_exchange.serve_lane``: the same parser, framing, tokens, errors)
on a thread of its own, with blocking reads and writes: a lane whose handler is slow or
whose response pipe is full holds that thread only. Plain handlers and WSGI apps run on
their lane's thread, so the lanes are the thread pool and AfterBurn-Streams its size;
async handlers and ASGI apps run as tasks on one event loop (``_aio.Runner``), their pipe
I/O still done by their lane's thread.

One thread of its own reads the cancel pipe (``_cancel.CancelReader``). A lane ends at EOF
between requests (§9.4) or at a fault of its own (a framing error, §8.8; a response that
failed after it started, §8.3; its response pipe closed): the lane's descriptors are closed
and the other lanes serve on, since a fault confined to a lane must not fail the exchanges
in flight on the others (the watchdog retires the worker make-before-break). The process
ends once every lane has ended: exit 0 when every lane ended at EOF, else the status of
the first fault.
"""

from __future__ import annotations

import os
import threading

from ._cancel import CancelReader
from ._exchange import open_conn, serve_lane
from ._state import log, serving_lanes

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ._exchange import Responder


def serve_lanes(lanes: list[tuple[int, int]], cancel_fd: int, limits: tuple[int, int], reply_head: str,
                respond: Responder) -> int:
    """Serves every lane of ``lanes`` ((request fd, response fd), lane 1 first) until each
    has ended; returns the exit status."""
    serving_lanes()
    cancels = CancelReader(cancel_fd)
    statuses = [0] * len(lanes)
    threads = [threading.Thread(target=_serve_lane, name=f"afterburn-lane-{n}", daemon=True,
                                args=(n, in_fd, out_fd, limits, reply_head, respond, cancels, statuses))
               for n, (in_fd, out_fd) in enumerate(lanes, 1)]
    # The starts are inside the try too: lane 1 may answer the handshake, and the next lanes
    # serve, before this thread is back from starting the last of them (Thread.start waits
    # for the thread to run); a SIGINT then raises here, and must still end the worker 130
    # without a traceback, as it does once every lane is started.
    try:
        cancels.start()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    except KeyboardInterrupt:
        return 130
    return next((s for s in statuses if s), 0)


def _serve_lane(number: int, in_fd: int, out_fd: int, limits: tuple[int, int], reply_head: str,
                respond: Responder, cancels: CancelReader, statuses: list[int]) -> None:
    try:
        # A refused handshake (§3.4) ends the worker there, not only this lane (serve_lane).
        status = serve_lane(open_conn(in_fd, out_fd, limits), respond, reply_head, cancels, number)
    except BaseException as e:  # never let one lane's thread die silently
        log(f"afterburn: lane {number} failed: {e!r}")
        status = 1
    finally:
        os.close(in_fd)
        os.close(out_fd)
    if status:
        log(f"afterburn: lane {number} closed after a fault (status {status}); the other lanes serve on")
    statuses[number - 1] = status
