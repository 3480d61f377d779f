"""The serve loop: the environment, the handshake's reply, the lanes or the template, and
the exit (PROTOCOL.md §2, §3, §9). Each lane's exchanges are served by ``_exchange``; the
state the whole process shares (the log, the request id) lives in ``_state``."""

from __future__ import annotations

import os

from ._exchange import (
    DEFAULT_ASYNC_LANES,
    DEFAULT_SYNC_LANES,
    FORKED_HEAD,
    TEMPLATE_HEAD,
    answer_handshake,
    handshake_head,
    handshake_reply,
    next_head,
    open_conn,
    serve_lane,
)
from ._fds import EnvError, lanes_from_env, limits_from_env, max_lanes_from_env, protocol_fds
from ._state import log
from ._warm import warm_up

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

    from ._conn import Conn
    from ._exchange import Responder

    # Readies the handler for lanes (an event loop on a thread of its own) and gives the
    # responder every lane's thread calls.
    LaneSetup = Callable[[], Responder]

__all__ = ["DEFAULT_ASYNC_LANES", "DEFAULT_SYNC_LANES", "run"]


def run(respond: Responder, startup: Callable[[], None] | None = None,
        shutdown: Callable[[], None] | None = None, *, max_lanes: int | None = None,
        default_lanes: int = DEFAULT_SYNC_LANES, lanes: LaneSetup | None = None,
        serve_one: Callable[[Conn, str], int] | None = None) -> None:
    """Serves the protocol until the watchdog closes the request pipe between two requests,
    then returns (the process exits 0, §9.4). When the worker must stop — a bad
    environment (§2.3), a framing error (§8.8), a failed handshake (§3.4), a response that
    failed after it started (§8.3) — it closes the response pipe and raises SystemExit
    with a non-zero status.

    With lanes (§2.5) it serves up to ``max_lanes`` of them (AFTERBURN_PY_MAX_LANES, else
    ``default_lanes``); ``lanes()`` then gives the responder the lanes' threads call
    (without it, ``respond``). With one lane, ``serve_one(conn, reply_head)``, when given,
    serves the lane in place of ``_exchange.serve_lane`` and returns as it does (the ASGI
    adapter: the whole stream one task on its event loop)."""
    try:
        limits = limits_from_env()
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
    template = None
    if control is not None:
        # §2.6: a template. It answers the handshake listing `fork`, closes fds 3 and 4,
        # and serves fork requests; each worker it forks returns here, its pipes on 3 and 4.
        _template_handshake(open_conn(in_fd, out_fd, limits), in_fd, out_fd)
        # Lazy: fork mode only; ctypes, socket, tempfile and a dlopen for prctl (§2.6).
        from . import _template as template

        try:
            template.serve_template(control)
        except SystemExit as e:
            # The control socket ended: the template's shutdown, as EOF is a worker's (§9.4);
            # an ASGI app's lifespan shutdown runs here, as it ran its start-up here.
            if e.code == 0 and shutdown is not None:
                shutdown()
            raise
        # A forked worker has one lane (§2.5); one of the single fork names its TMPDIR (§2.7).
        reply_head = FORKED_HEAD + template.handshake_fields
        extra_lanes = []
        one_shot = os.environ.get("AFTERBURN_ISOLATION") == "request"
    else:
        one_shot = False
    if extra_lanes and cancel_fd is not None:
        # Lazy: lanes only; they import threading, which a worker of one lane never needs.
        from ._lanes import serve_lanes

        # Each lane closes its own descriptors when it ends.
        status = serve_lanes([(in_fd, out_fd), *extra_lanes], cancel_fd, limits, reply_head,
                             lanes() if lanes is not None else respond)
        if status == 0 and shutdown is not None:
            shutdown()
    else:
        if one_shot:
            # §2.7 "Warm spares": before the handshake, so the request does not wait for it.
            warm_up()
        if template is not None and template.unasked:
            # §2.6: forked with "fork-child <slot> unasked": the reply goes out once the spare is
            # warm, and the watchdog writes no handshake request. One write of a few hundred
            # bytes, whole on a pipe (PIPE_BUF).
            try:
                os.write(out_fd, handshake_reply(reply_head))
            except OSError as e:
                log(f"afterburn: the response pipe is closed; the watchdog is gone ({e})")
                template._flush()
                os._exit(1)
        conn = open_conn(in_fd, out_fd, limits)
        try:
            if serve_one is not None:
                status = serve_one(conn, reply_head)
            else:
                status = serve_lane(conn, respond, reply_head)
        except KeyboardInterrupt:
            status = 130
        if status == 0 and shutdown is not None:
            shutdown()
        os.close(out_fd)
    if one_shot:
        # §2.7: a worker forked for one request exits at the EOF after it at once. All it
        # holds dies with it; the interpreter's finalisation would only spend time writing
        # to pages it shares with the template. So atexit handlers do not run here.
        assert template is not None  # one_shot is a worker forked from a template
        template._flush()
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
        head = next_head(conn)
    except OSError as e:
        log(f"afterburn: template: the request pipe failed before the handshake ({e})")
        raise SystemExit(1) from None
    if type(head) is int:
        raise SystemExit(head)  # §9.4: closed before it was ready (0); §8.8: not parsed (1)
    if head.handshake is None:
        log(f"afterburn: template: got {head.method} {head.path} before the handshake; a template serves no request")
        raise SystemExit(1)
    try:
        status = answer_handshake(conn, head, TEMPLATE_HEAD)
    except OSError as e:
        log(f"afterburn: template: the response pipe is closed; the watchdog is gone ({e})")
        status = 1
    if status:
        raise SystemExit(status)
    os.close(in_fd)
    os.close(out_fd)
