"""The exchange loop: one lane's stream of exchanges, one after another (PROTOCOL.md §3, §4, §8).

A lane is a pair of pipes carrying an AfterBurn/1 keep-alive stream (§2.1): the worker's
only lane, or one of its lanes (§2.5, ``_lanes``). ``serve_lane`` serves one, whichever it
is; the serve loop (``_serve``) and each lane's thread both call it. Each request of the
stream is the handshake (§3), answered here and never passed to the handler, or an
exchange: the handler runs, and what it leaves (an error, an unread body, a broken request
stream) is settled here before the next request is read.
"""

from __future__ import annotations

import io
import os
import time
from functools import partial

from ._conn import Conn
from ._errors import HANDLER_ERROR, VERSION_MISMATCH, Cancelled, ProtocolError, exchange_line
from ._handler import PRE_DRAIN
from ._headers import Headers
from ._parser import DEFAULT_MAX_HEAD, END_OF_STREAM, RequestHead, RequestParser
from ._request import Request
from ._state import CURRENT, log, log_exception, log_request, new_request_id
from ._version import __version__
from ._writer import ResponseWriter

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from ._cancel import CancelReader

    Responder = Callable[[Request, ResponseWriter], None]

# The one version of PROTOCOL.md this library speaks.
PROTOCOL_VERSION = "1"

# The most lanes a worker serves by default (§2.5, AfterBurn-Streams): a thread each for
# plain handlers and WSGI apps, a task each on one event loop for async ones and ASGI apps.
DEFAULT_SYNC_LANES = 32
DEFAULT_ASYNC_LANES = 1024


# PROTOCOL.md §3.2; the capability `exchange`: this library echoes exchange tokens (§4.6);
# `streams`: it serves lanes (§2.5), at most AfterBurn-Streams of them, a field it sends
# whether or not the watchdog gave it lanes. A template lists `fork` (§2.6); a worker forked
# from one keeps one lane (lanes and fork mode are not combined, §2.5), so lists `exchange`.
def _handshake_head(capabilities: str, extra: str = "") -> str:
    return ("HTTP/1.1 200 OK\r\n"
            f"AfterBurn-Protocol: {PROTOCOL_VERSION}\r\n"
            f"AfterBurn-Library: python/{__version__}\r\n"
            f"AfterBurn-Capabilities: {capabilities}\r\n{extra}")


def handshake_head(max_lanes: int) -> str:
    """The head of the handshake reply of a worker that serves up to ``max_lanes`` lanes."""
    return _handshake_head("exchange, streams", f"AfterBurn-Streams: {max_lanes}\r\n")


FORKED_HEAD = _handshake_head("exchange")
# `fork-child`: the single fork (§2.6), where the template can watch its workers by pidfd;
# `unasked-handshake`: its workers can answer the handshake without being asked.
TEMPLATE_HEAD = _handshake_head("exchange, fork, fork-child, unasked-handshake" if hasattr(os, "pidfd_open")
                                else "exchange, fork")


def open_conn(in_fd: int, out_fd: int, limits: tuple[int, int]) -> Conn:
    """A Conn on a lane's request and response descriptors; ``limits`` (max head bytes,
    max body bytes or 0 for unlimited) as ``_fds.limits_from_env`` gives them (§7.3)."""
    return Conn(partial(os.read, in_fd), partial(os.write, out_fd), RequestParser(*limits), out_fd)


def serve_lane(conn: Conn, respond: Responder, reply_head: str, cancels: CancelReader | None = None,
               lane: int | None = None) -> int:
    """Serves one lane until EOF between requests (0) or a fault (the exit status to stop
    with). ``lane`` is the lane's number when the worker has lanes (§2.5), None for its only
    lane; ``cancels`` then registers each exchange's cancellation under its token.

    A response pipe that fails is the watchdog gone: logged, status 1. A handshake offering
    no version this library speaks (§3.4) ends the worker with 1; with lanes it ends the
    whole process here and now, not only its lane (§2.5), since nothing of the other lanes
    has begun."""
    try:
        status = serve_stream(conn, respond, reply_head, cancels)
    except OSError as e:
        where = "" if lane is None else f"lane {lane}: "
        log(f"afterburn: {where}the response pipe is closed; the watchdog is gone ({e})")
        return 1
    if conn.refused and lane is not None:
        os._exit(status)
    return status


def serve_stream(conn: Conn, respond: Responder, reply_head: str = "", cancels: CancelReader | None = None) -> int:
    """Serves one stream of exchanges until EOF between requests (0) or a fault (the exit
    status to stop with); an OSError of the response pipe propagates (``serve_lane``)."""
    while True:
        ev = next_head(conn)
        if type(ev) is int:
            return ev
        assert isinstance(ev, RequestHead)
        if ev.handshake is not None:
            # §3.1: recognised by its field, wherever it comes; never passed to the handler.
            status = answer_handshake(conn, ev, reply_head or handshake_head(DEFAULT_SYNC_LANES))
        else:
            status = exchange(conn, ev, respond, cancels)
        if status:
            return status


async def serve_stream_async(conn: Conn, respond: Callable[[Request, ResponseWriter], Any],
                             reply_head: str) -> int:
    """``serve_stream`` for a responder that is a coroutine function, run as one task for
    the whole stream (one lane, §2.1): each exchange is awaited in this task, so a
    responder that never waits costs no turn of the event loop. Pipe reads and writes
    block the loop, as they do between the exchanges of ``Runner.run``."""
    while True:
        ev = next_head(conn)
        if type(ev) is int:
            return ev
        assert isinstance(ev, RequestHead)
        if ev.handshake is not None:
            status = answer_handshake(conn, ev, reply_head or handshake_head(DEFAULT_ASYNC_LANES))
        else:
            try:
                req, w = begin_exchange(conn, ev)
                error: BaseException | None = None
                try:
                    await respond(req, w)
                except Exception as e:
                    error = e
                status = end_exchange(conn, req, w, error)
            finally:
                CURRENT.set("-")  # RequestIdFilter: no request between two
        if status:
            return status


def next_head(conn: Conn) -> RequestHead | int:
    """The head of the stream's next request, its token made the exchange's (§4.6); or the
    status to stop with: 0 at EOF between requests (§9.4), 1 after answering a head that
    cannot be parsed (§8.8)."""
    try:
        ev = conn.event()
    except ProtocolError as e:
        conn.exchange = e.exchange  # §4.6: the token of the head, when it was read
        return reject(conn, e, e.request_id)
    if ev is END_OF_STREAM:
        return 0  # §9.4: EOF between requests
    assert isinstance(ev, RequestHead)  # between requests the parser gives heads only
    # §4.6: every response head for this request, whoever writes it, carries its token.
    conn.exchange = ev.exchange
    return ev


def reject(conn: Conn, e: ProtocolError, request_id: str | None) -> int:
    """§8.8: answer a request that cannot be parsed, then stop."""
    log_request(request_id, f"afterburn: {e.status} {e.type}: {e}")
    try:
        conn.send_error(e.type, request_id)
    except OSError:
        pass
    return 1


def answer_handshake(conn: Conn, head: RequestHead, reply_head: str) -> int:
    try:
        conn.begin(None, head.has_body)
        conn.drain()
    except ProtocolError as e:
        return reject(conn, e, None)
    offered = [v.strip(" \t") for v in head.handshake.split(",")]  # type: ignore[union-attr]
    if PROTOCOL_VERSION not in offered:
        # §3.4: 400 version_mismatch listing the versions spoken, then exit non-zero.
        log(f"afterburn: the watchdog offers protocol versions {head.handshake!r}; "
            f"this library speaks {PROTOCOL_VERSION}")
        conn.refused = True
        conn.send_error(VERSION_MISMATCH, None, f"AfterBurn-Protocol: {PROTOCOL_VERSION}\r\n")
        return 1
    # The first handshake carries no token (§4.6); a repeated one does, and its reply echoes it
    # (§3.5).
    conn.send([handshake_reply(reply_head, head.exchange)])
    return 0


def handshake_reply(reply_head: str, exchange: str | None = None) -> bytes:
    """The whole handshake reply (§3.2): ``reply_head``, the echoed token of a repeated
    handshake (§4.6), an empty body. Also what a worker forked unasked writes (§2.6)."""
    return (reply_head + exchange_line(exchange) + "Content-Length: 0\r\n\r\n").encode()


def exchange_in_memory(raw: bytes, respond: Responder) -> tuple[bytes, int]:
    """Runs the one request in ``raw`` through the library's path (parser, exchange, response
    writer) with ``respond``, in memory; returns what it wrote and the exit status: the core of
    testing.call and of a spare's warm-up (_warm)."""
    out = bytearray()

    def write(data: bytes | memoryview) -> int:
        out.extend(data)
        return len(data)

    conn = Conn(io.BytesIO(raw).read, write, RequestParser(DEFAULT_MAX_HEAD, 0))
    head = conn.event()
    assert isinstance(head, RequestHead), head
    status = exchange(conn, head, respond)
    return bytes(out), status


def exchange(conn: Conn, head: RequestHead, respond: Responder, cancels: CancelReader | None = None, *,
             interruptible: bool = True) -> int:
    """Runs one request through the responder and ends it; returns the exit status to stop
    with, or 0 to go on. With ``cancels`` (lanes, §2.5) the exchange's cancellation is
    registered under its token while it is in flight, so the cancel pipe can fire it.
    Without (one lane, the main thread), a request with a deadline arms the alarm that
    raises Cancelled in a synchronous handler (_alarm), ``interruptible`` allowing."""
    if cancels is not None:
        return _exchange_on_lane(conn, head, respond, cancels)
    try:
        req, w = begin_exchange(conn, head)
        error: BaseException | None = None
        if req.deadline is None or not interruptible:
            try:
                respond(req, w)
            except Exception as e:
                error = e
        else:
            error = _respond_with_alarm(conn, req, w, respond)
        return end_exchange(conn, req, w, error)
    finally:
        CURRENT.set("-")  # RequestIdFilter: no request between two


def _exchange_on_lane(conn: Conn, head: RequestHead, respond: Responder, cancels: CancelReader) -> int:
    # A lane's thread: the cancellation is the flag, never the alarm (main thread only).
    if head.exchange is None:
        return exchange(conn, head, respond, None, interruptible=False)
    token = head.exchange
    try:
        return exchange(conn, head, _with_cancellation(respond, cancels, token), None, interruptible=False)
    finally:
        cancels.unregister(token)


def begin_exchange(conn: Conn, head: RequestHead) -> tuple[Request, ResponseWriter]:
    """The Request and the ResponseWriter of one exchange, its request id made current
    (RequestIdFilter) and its deadline set; what every responder is called with."""
    rid = head.request_id or new_request_id()
    CURRENT.set(rid)
    # §5.2: the deadline counts from the moment the head was read, on the monotonic clock.
    timeout_ms = head.timeout_ms
    deadline = None if timeout_ms is None else time.monotonic() + timeout_ms / 1000
    has_body = head.has_body
    method = head.method
    req = Request(method, head.target, Headers(head.fields), rid, deadline,
                  conn.pull if has_body else None,
                  path=head.path, query=head.query, http_version=head.http_version)
    conn.begin(req, has_body)
    return req, ResponseWriter(conn.send, method == "HEAD", head.exchange)


def end_exchange(conn: Conn, req: Request, w: ResponseWriter, error: BaseException | None) -> int:
    """Settles an exchange once its responder returned, or raised ``error``: the error
    answered or logged, the unread body drained (§6.3, §8.3, §8.8). Returns the exit status
    to stop with, or 0 to go on."""
    rid = req.request_id
    if conn.broken is not None:
        raise conn.broken  # not the handler's failure: the watchdog is gone
    fatal = conn.fatal
    if fatal is not None:
        # §8.8: the request stream broke under the handler.
        if w.sent:
            log_request(rid, f"afterburn: {fatal.status} {fatal.type} after the response started: {fatal}")
            return 1
        return reject(conn, fatal, rid)
    if error is not None and w.ended and _is_cancellation(error):
        # §2.5: the cancellation crossed the response, which is complete: nothing failed.
        error = None
    if error is not None:
        if _is_cancellation(error):
            # §2.5: the task's traceback would only show the loop's machinery.
            log_request(rid, f"afterburn: {req.method} {req.path} was cancelled (the watchdog's cancellation "
                "or the deadline) before its response ended")
        else:
            log_exception(rid, req, error)
        if w.sent:
            # §8.3: the status cannot change any more; leave the response incomplete (no
            # last chunk, or short of its Content-Length) and exit non-zero.
            return 1
        try:
            conn.drain(PRE_DRAIN)  # a framing error in a short body is answered as one
        except ProtocolError as e:
            return reject(conn, e, rid)
        # §8.3: 500 handler_error, never the exception's message; keep serving.
        conn.send_error(HANDLER_ERROR, rid)
    if conn.body_done:
        return 0  # the common case: the body was read, or there was none
    try:
        conn.drain()  # §6.3: what the handler left, before the next request
    except ProtocolError as e:
        log_request(rid, f"afterburn: {e.status} {e.type} in the unread request body: {e}")
        return 1
    return 0


# The deadline alarm's module, imported by the first exchange that has a deadline.
_alarm: Any = None


def _respond_with_alarm(conn: Conn, req: Request, w: ResponseWriter, respond: Responder) -> BaseException | None:
    """Runs the responder under the exchange's deadline alarm (§2.5, §5.2): Cancelled in a
    synchronous handler 50 ms after the deadline, its pipe I/O shielded (Conn.alarm), and
    the alarm stopped before the library writes anything of its own. Returns what the
    handler raised, or None."""
    global _alarm
    if _alarm is None:
        # Lazy: signal and threading, for the exchanges with a deadline only (cold start).
        from . import _alarm
    alarm = _alarm.arm(req)
    if alarm is None:
        try:
            respond(req, w)
        except Exception as e:
            return e
        return None
    try:
        conn.alarm = alarm
        try:
            respond(req, w)
        finally:
            conn.alarm = None
            _alarm.disarm(alarm)
    except (Exception, Cancelled) as e:
        return e
    return None


def _is_cancellation(error: BaseException) -> bool:
    # Cancelled (the alarm) or concurrent.futures.CancelledError (a task, §2.5), by name:
    # the single-lane path never imports concurrent.futures.
    return isinstance(error, Cancelled) or type(error).__name__ == "CancelledError"


def _with_cancellation(respond: Responder, cancels: CancelReader, token: str) -> Responder:
    def respond_cancellable(req: Request, w: ResponseWriter) -> None:
        cancels.register(token, req.cancellation)
        respond(req, w)

    return respond_cancellable
