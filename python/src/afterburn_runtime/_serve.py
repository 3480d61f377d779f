"""The serve loop: handshake, exchanges one after another, errors and exit (PROTOCOL.md §3, §8, §9)."""

from __future__ import annotations

import os
import time
from contextvars import ContextVar
from functools import partial

from ._conn import Conn
from ._errors import HANDLER_ERROR, VERSION_MISMATCH, Cancelled, ProtocolError, exchange_line
from ._fds import EnvError, lanes_from_env, limits_from_env, max_lanes_from_env, protocol_fds
from ._handler import PRE_DRAIN
from ._headers import Headers
from ._parser import END_OF_STREAM, RequestHead, RequestParser
from ._request import Request
from ._version import __version__
from ._writer import ResponseWriter

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from ._cancel import CancelReader

    Responder = Callable[[Request, ResponseWriter], None]
    # Readies the handler for lanes (an event loop on a thread of its own) and gives the
    # responder every lane's thread calls.
    LaneSetup = Callable[[], Responder]

# The one version of PROTOCOL.md this library speaks.
PROTOCOL_VERSION = "1"

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
TEMPLATE_HEAD = _handshake_head("exchange, fork")

# Set once this process serves more than one lane: a WSGI app is then called from several
# threads at once (wsgi.multithread).
lanes_active = False

# The request id of the exchange being served in this thread (each lane's thread has its
# own) or asyncio task (copied from the lane that started it): RequestIdFilter reads it.
CURRENT: ContextVar[str] = ContextVar("afterburn_request_id", default="-")

# The most lanes a worker serves by default (§2.5, AfterBurn-Streams): a thread each for
# plain handlers and WSGI apps, a task each on one event loop for async ones and ASGI apps.
DEFAULT_SYNC_LANES = 32
DEFAULT_ASYNC_LANES = 1024


def log(message: str) -> None:
    """One record on stderr, in one write, so that it stays one block in the watchdog's
    log (§9.5) whatever else the process writes."""
    data = (message if message.endswith("\n") else message + "\n").encode(errors="replace")
    while data:
        data = data[os.write(2, data) :]


def log_request(request_id: str | None, message: str, level: str = "error") -> None:
    """One record of the library's own about a request: ``[request-id] message``, or with
    AFTERBURN_LOG_FORMAT=json one JSON line (conformance contract C), a traceback in it."""
    from ._logline import json_mode, request_line

    if json_mode():
        log(request_line(request_id, message, level))
    else:
        log(f"[{request_id or '-'}] {message}")


def new_request_id() -> str:
    """A request id as the watchdog makes one: 128 random bits as 32 lower-case hex digits
    (§5.1); for a legacy watchdog that sends none (§11.1)."""
    return os.urandom(16).hex()


def run(respond: Responder, startup: Callable[[], None] | None = None,
        shutdown: Callable[[], None] | None = None, *, max_lanes: int | None = None,
        default_lanes: int = DEFAULT_SYNC_LANES, lanes: LaneSetup | None = None) -> None:
    """Serves the protocol until the watchdog closes the request pipe between two requests,
    then returns (the process exits 0, §9.4). When the worker must stop — a bad
    environment (§2.3), a framing error (§8.8), a failed handshake (§3.4), a response that
    failed after it started (§8.3) — it closes the response pipe and raises SystemExit
    with a non-zero status.

    With lanes (§2.5) it serves up to ``max_lanes`` of them (AFTERBURN_PY_MAX_LANES, else
    ``default_lanes``); ``lanes()`` then gives the responder the lanes' threads call
    (without it, ``respond``)."""
    try:
        max_head, max_body = limits_from_env()
        in_fd, out_fd = protocol_fds()
        if max_lanes is None:
            max_lanes = max_lanes_from_env(default_lanes)
        elif max_lanes < 1:
            raise EnvError(f"afterburn: max_lanes must be at least 1, got {max_lanes}")
        extra_lanes, cancel_fd = lanes_from_env()
    except EnvError as e:
        log(str(e))
        raise SystemExit(2) from None
    # §2.5: L = min(K, N); the descriptors of lanes L + 1 to K are this library's to close.
    for pair in extra_lanes[max_lanes - 1 :]:
        for fd in pair:
            os.close(fd)
    extra_lanes = extra_lanes[: max_lanes - 1]
    if cancel_fd is not None and not extra_lanes:
        os.close(cancel_fd)  # one lane: nothing to cancel but what the deadline does
        cancel_fd = None
    if startup is not None:
        startup()  # an exception here is an initialisation failure: traceback, exit 1 (§9.1)
    reply_head = handshake_head(max_lanes)
    control = _control_fd(in_fd, out_fd)
    if control is not None:
        # §2.6: a template. It answers the handshake listing `fork`, closes fds 3 and 4,
        # and serves fork requests; each worker it forks returns here, its pipes on 3 and 4.
        conn = Conn(partial(os.read, in_fd), partial(os.write, out_fd), RequestParser(max_head, max_body))
        _template_handshake(conn, in_fd, out_fd)
        from ._template import serve_template

        try:
            serve_template(control)
        except SystemExit as e:
            # The control socket ended: the template's shutdown, as EOF is a worker's (§9.4);
            # an ASGI app's lifespan shutdown runs here, as it ran its start-up here.
            if e.code == 0 and shutdown is not None:
                shutdown()
            raise
        reply_head = FORKED_HEAD  # a forked worker has one lane (§2.5)
        extra_lanes = []
        one_shot = os.environ.get("AFTERBURN_ISOLATION") == "request"
    else:
        one_shot = False
    if extra_lanes and cancel_fd is not None:
        from ._lanes import serve_lanes

        # Each lane closes its own descriptors when it ends.
        status = serve_lanes([(in_fd, out_fd), *extra_lanes], cancel_fd, (max_head, max_body), reply_head,
                             lanes() if lanes is not None else respond)
        if status == 0 and shutdown is not None:
            shutdown()
    else:
        conn = Conn(partial(os.read, in_fd), partial(os.write, out_fd), RequestParser(max_head, max_body))
        try:
            status = _loop(conn, respond, reply_head)
        except OSError as e:
            log(f"afterburn: the response pipe is closed; the watchdog is gone ({e})")
            status = 1
        except KeyboardInterrupt:
            status = 130
        if status == 0 and shutdown is not None:
            shutdown()
        os.close(out_fd)
    if one_shot:
        # §2.7: a worker forked for one request exits at the EOF after it at once. All it
        # holds dies with it; the interpreter's finalisation would only spend time writing
        # to pages it shares with the template. So atexit handlers do not run here.
        from ._template import _flush  # imported already: this process is a fork of a template

        _flush()
        os._exit(status)
    if status:
        raise SystemExit(status)


def _control_fd(in_fd: int, out_fd: int) -> int | None:
    """The control socket named by AFTERBURN_CONTROL_FD (§2.3, §2.6), or None: not a template."""
    value = os.environ.get("AFTERBURN_CONTROL_FD")
    if value is None:
        return None
    if (in_fd, out_fd) != (3, 4):
        # A fork moves the worker's pipes onto 3 and 4 (§2.6): a template outside fd mode
        # would hand its workers descriptors other than those it reads. Be a plain worker;
        # the watchdog then starts the others the exec way.
        log("afterburn: AFTERBURN_CONTROL_FD is set but AFTERBURN_FDS is not 3,4; not forking")
        return None
    try:
        fd = int(value) if value.isdigit() and value.isascii() and len(value) < 10 else -1
        if fd <= 4:
            raise OSError(f"want a descriptor above 4, got {value!r}")
        os.fstat(fd)
    except OSError as e:
        log(f"afterburn: bad AFTERBURN_CONTROL_FD in environment: {value!r} ({e})")
        raise SystemExit(2) from None
    return fd


def _template_handshake(conn: Conn, in_fd: int, out_fd: int) -> None:
    """§2.6: the template answers one handshake, listing `fork`, then closes fds 3 and 4.
    A request that is not the handshake, or EOF, ends it (the watchdog drives a template
    with the handshake and the control socket only)."""
    try:
        ev = conn.event()
    except ProtocolError as e:
        conn.exchange = e.exchange
        raise SystemExit(_reject(conn, e, e.request_id)) from None
    except OSError as e:
        log(f"afterburn: template: the request pipe failed before the handshake ({e})")
        raise SystemExit(1) from None
    if ev is END_OF_STREAM:
        raise SystemExit(0)  # §9.4: closed before it was ready
    assert isinstance(ev, RequestHead)
    conn.exchange = ev.exchange
    if ev.handshake is None:
        log(f"afterburn: template: got {ev.method} {ev.path} before the handshake; a template serves no request")
        raise SystemExit(1)
    try:
        status = _answer_handshake(conn, ev, TEMPLATE_HEAD)
    except OSError as e:
        log(f"afterburn: template: the response pipe is closed; the watchdog is gone ({e})")
        status = 1
    if status:
        raise SystemExit(status)
    os.close(in_fd)
    os.close(out_fd)


def _loop(conn: Conn, respond: Responder, reply_head: str = "", cancels: CancelReader | None = None) -> int:
    """Serves one stream of exchanges (the worker's only lane, or one of its lanes, §2.5)
    until EOF between requests (0) or a fault (the exit status to stop with)."""
    while True:
        try:
            ev = conn.event()
        except ProtocolError as e:
            conn.exchange = e.exchange  # §4.6: the token of the head, when it was read
            return _reject(conn, e, e.request_id)
        if ev is END_OF_STREAM:
            return 0  # §9.4: EOF between requests
        assert isinstance(ev, RequestHead)  # between requests the parser gives heads only
        # §4.6: every response head for this request, whoever writes it, carries its token.
        conn.exchange = ev.exchange
        if ev.handshake is not None:
            # §3.1: recognised by its field, wherever it comes; never passed to the handler.
            status = _answer_handshake(conn, ev, reply_head or handshake_head(DEFAULT_SYNC_LANES))
        else:
            status = _exchange(conn, ev, respond, cancels)
        if status:
            return status


def _reject(conn: Conn, e: ProtocolError, request_id: str | None) -> int:
    """§8.8: answer a request that cannot be parsed, then stop."""
    log_request(request_id, f"afterburn: {e.status} {e.type}: {e}")
    try:
        conn.send_error(e.type, request_id)
    except OSError:
        pass
    return 1


def _answer_handshake(conn: Conn, head: RequestHead, reply_head: str) -> int:
    try:
        conn.begin(None, head.has_body)
        conn.drain()
    except ProtocolError as e:
        return _reject(conn, e, None)
    offered = [v.strip(" \t") for v in head.handshake.split(",")]  # type: ignore[union-attr]
    if PROTOCOL_VERSION not in offered:
        # §3.4: 400 version_mismatch listing the versions spoken, then exit non-zero.
        log(f"afterburn: the watchdog offers protocol versions {head.handshake!r}; "
            f"this library speaks {PROTOCOL_VERSION}")
        conn.refused = True
        conn.send_error(VERSION_MISMATCH, None, f"AfterBurn-Protocol: {PROTOCOL_VERSION}\r\n")
        return 1
    if head.exchange is None:
        # the first handshake carries no token (§4.6)
        conn.send([(reply_head + "Content-Length: 0\r\n\r\n").encode()])
    else:
        # §3.5, §4.6: a repeated handshake carries a token, and its reply echoes it.
        conn.send([(reply_head + exchange_line(head.exchange) + "Content-Length: 0\r\n\r\n").encode()])
    return 0


def _exchange(conn: Conn, head: RequestHead, respond: Responder, cancels: CancelReader | None = None, *,
              interruptible: bool = True) -> int:
    """Runs one request through the responder and ends it; returns the exit status to stop
    with, or 0 to go on. With ``cancels`` (lanes, §2.5) the exchange's cancellation is
    registered under its token while it is in flight, so the cancel pipe can fire it.
    Without (one lane, the main thread), a request with a deadline arms the alarm that
    raises Cancelled in a synchronous handler (_alarm), ``interruptible`` allowing."""
    try:
        return _serve_exchange(conn, head, respond, cancels, interruptible)
    finally:
        CURRENT.set("-")  # RequestIdFilter: no request between two


def _serve_exchange(conn: Conn, head: RequestHead, respond: Responder, cancels: CancelReader | None,
                    interruptible: bool) -> int:
    if cancels is not None:
        # A lane's thread: the cancellation is the flag, never the alarm (main thread only).
        if head.exchange is None:
            return _serve_exchange(conn, head, respond, None, False)
        token = head.exchange
        try:
            return _serve_exchange(conn, head, _with_cancellation(respond, cancels, token), None, False)
        finally:
            cancels.unregister(token)
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
    w = ResponseWriter(conn.send, method == "HEAD", head.exchange)
    error: BaseException | None = None
    if deadline is None or not interruptible:
        try:
            respond(req, w)
        except Exception as e:
            error = e
    else:
        error = _respond_with_alarm(conn, req, w, respond)
    if conn.broken is not None:
        raise conn.broken  # not the handler's failure: the watchdog is gone
    fatal = conn.fatal
    if fatal is not None:
        # §8.8: the request stream broke under the handler.
        if w.sent:
            log_request(rid, f"afterburn: {fatal.status} {fatal.type} after the response started: {fatal}")
            return 1
        return _reject(conn, fatal, rid)
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
            return _reject(conn, e, rid)
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


def log_exception(rid: str, req: Request, error: BaseException) -> None:
    """§8.3: the exception and its stack on stderr, in one write whose first line names the
    request id. The path is logged without the query, which may hold secrets (§9.5)."""
    import traceback

    tb = "".join(traceback.format_exception(type(error), error, error.__traceback__))
    log_request(rid, f"afterburn: exception serving {req.method} {req.path}\n{tb.rstrip()}")
