"""The protocol descriptors and the protection of stdout and stdin (PROTOCOL.md §2.2-§2.4)."""

from __future__ import annotations

import os
import sys

from ._parser import DEFAULT_MAX_HEAD, HEAD_SLACK


class EnvError(Exception):
    """The watchdog's environment is unusable (PROTOCOL.md §2.3): the worker must exit non-zero."""


def _digits(name: str, value: str, want: str) -> int:
    if not (value.isdigit() and value.isascii()) or len(value) > 18:
        raise EnvError(f"afterburn: bad {name} in environment: {value!r} (want {want})")
    return int(value)


def parse_fds(value: str) -> tuple[int, int]:
    """AFTERBURN_FDS: two decimal descriptors separated by a comma (§2.3)."""
    a, comma, b = value.partition(",")
    want = 'two descriptors separated by a comma, like "3,4"'
    if not comma:
        raise EnvError(f"afterburn: bad AFTERBURN_FDS in environment: {value!r} (want {want})")
    return _digits("AFTERBURN_FDS", a, want), _digits("AFTERBURN_FDS", b, want)


def limits_from_env(environ: dict[str, str] | os._Environ[str] = os.environ) -> tuple[int, int]:
    """(max head bytes, max body bytes or 0 for unlimited), as §7.3 says a library accepts:
    AFTERBURN_MAX_HEADER_BYTES + 1024, AFTERBURN_MAX_BODY_BYTES; 65536 and unlimited
    without them."""
    max_head, max_body = DEFAULT_MAX_HEAD, 0
    v = environ.get("AFTERBURN_MAX_HEADER_BYTES")
    if v is not None:
        max_head = _digits("AFTERBURN_MAX_HEADER_BYTES", v, "a number of bytes") + HEAD_SLACK
    v = environ.get("AFTERBURN_MAX_BODY_BYTES")
    if v is not None:
        max_body = _digits("AFTERBURN_MAX_BODY_BYTES", v, "a number of bytes, 0 for unlimited")
    return max_head, max_body


# The descriptors once taken; protection happens at most once per process.
_taken: tuple[int, int] | None = None


def protocol_fds() -> tuple[int, int]:
    """The request and response descriptors (§2.2): those of AFTERBURN_FDS, or 0 and 1
    without it (a legacy watchdog, §11.1). When they are stdin or stdout they are first
    moved to private descriptors and fd 0 becomes /dev/null and fd 1 a copy of fd 2, so
    that nothing user code prints or reads — print, os.write(1, ...), a C extension's
    printf — can touch the protocol (§2.4)."""
    global _taken
    if _taken is not None:
        return _taken
    value = os.environ.get("AFTERBURN_FDS")
    in_fd, out_fd = parse_fds(value) if value is not None else (0, 1)
    for fd in (in_fd, out_fd):
        try:
            os.fstat(fd)
        except OSError as e:
            raise EnvError(f"afterburn: AFTERBURN_FDS names descriptor {fd}, which is not open: {e}") from None
    if in_fd <= 1 or out_fd <= 1:
        in_fd, out_fd = _move_off_stdio(in_fd, out_fd)
    else:
        # Processes the handler starts must not hold the pipes open.
        os.set_inheritable(in_fd, False)
        os.set_inheritable(out_fd, False)
    _line_buffer_stdout()
    _taken = (in_fd, out_fd)
    return _taken


def protect_early() -> None:
    """Moves the protocol off fds 0 and 1 at import time when the watchdog says it is there
    (AFTERBURN_FDS naming fd 0 or 1, stdio mode), so prints between the import of this
    package and serve() are protected too. Without AFTERBURN_FDS nothing happens here:
    that is a legacy watchdog (serve() protects then) or no watchdog at all, a test or a
    tool that imports the package and whose stdout must stay its stdout."""
    value = os.environ.get("AFTERBURN_FDS")
    if value is None:
        return
    try:
        in_fd, out_fd = parse_fds(value)
    except EnvError:
        return  # serve() reports it
    if in_fd <= 1 or out_fd <= 1:
        try:
            protocol_fds()
        except EnvError:
            pass  # serve() reports it


def _move_off_stdio(in_fd: int, out_fd: int) -> tuple[int, int]:
    new_in = _dup_private(in_fd)
    new_out = new_in if out_fd == in_fd else _dup_private(out_fd)
    if in_fd == 0 or out_fd == 0:
        null = os.open(os.devnull, os.O_RDWR)
        os.dup2(null, 0)
        os.close(null)
    if in_fd == 1 or out_fd == 1:
        # Whatever sys.stdout still buffers is written to fd 1 later, which is then
        # stderr: a banner printed before this point never reaches the response pipe.
        os.dup2(2, 1)
    return new_in, new_out


def _dup_private(fd: int) -> int:
    """A non-inheritable duplicate of fd above 2 (a closed stderr would hand out fd 2)."""
    spare = []
    try:
        while True:
            new = os.dup(fd)
            if new > 2:
                return new
            spare.append(new)
    finally:
        for s in spare:
            os.close(s)


def _line_buffer_stdout() -> None:
    # PROTOCOL.md §9.5: worker output is forwarded line by line; a block-buffered stdout
    # would hold prints until exit.
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            try:
                reconfigure(line_buffering=True)
            except (ValueError, OSError):
                pass


def lanes_from_env(environ: dict[str, str] | os._Environ[str] = os.environ) -> tuple[list[tuple[int, int]], int | None]:
    """PROTOCOL.md §2.5: the (request, response) descriptors of lanes 2 to K, from
    AFTERBURN_STREAM_FDS, and the cancel pipe of AFTERBURN_STREAM_CANCEL_FD; ([], None)
    without them (one lane, as before lanes existed). Each descriptor must be open."""
    value = environ.get("AFTERBURN_STREAM_FDS")
    if value is None:
        return [], None
    want = 'an even number of descriptors separated by commas, like "5,6,7,8"'
    parts = value.split(",")
    if len(parts) % 2:
        raise EnvError(f"afterburn: bad AFTERBURN_STREAM_FDS in environment: {value!r} (want {want})")
    fds = [_digits("AFTERBURN_STREAM_FDS", p, want) for p in parts]
    cancel_value = environ.get("AFTERBURN_STREAM_CANCEL_FD")
    if cancel_value is None:
        raise EnvError("afterburn: AFTERBURN_STREAM_FDS is set but AFTERBURN_STREAM_CANCEL_FD is not (§2.5)")
    cancel = _digits("AFTERBURN_STREAM_CANCEL_FD", cancel_value, "one descriptor, like \"9\"")
    for name, fd in [*(("AFTERBURN_STREAM_FDS", fd) for fd in fds), ("AFTERBURN_STREAM_CANCEL_FD", cancel)]:
        try:
            os.fstat(fd)
        except OSError as e:
            raise EnvError(f"afterburn: {name} names descriptor {fd}, which is not open: {e}") from None
        # Processes the handler starts must not hold the lanes open (§2.2).
        os.set_inheritable(fd, False)
    return list(zip(fds[::2], fds[1::2])), cancel


def max_lanes_from_env(default: int, environ: dict[str, str] | os._Environ[str] = os.environ) -> int:
    """The most lanes this process serves (the AfterBurn-Streams it states, §2.5):
    AFTERBURN_PY_MAX_LANES when set, else ``default``."""
    value = environ.get("AFTERBURN_PY_MAX_LANES")
    if value is None:
        return default
    n = _digits("AFTERBURN_PY_MAX_LANES", value, "a number of lanes, at least 1")
    if n < 1:
        raise EnvError(f"afterburn: bad AFTERBURN_PY_MAX_LANES in environment: {value!r} (want at least 1)")
    return n
