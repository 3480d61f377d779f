"""The control messages between the watchdog and a template, sans I/O (PROTOCOL.md §2.6).

Each message is one SOCK_SEQPACKET record of at most 512 bytes:

=============================  ======================  =====================================
``fork <slot>\\n``              watchdog → template     4 descriptors (SCM_RIGHTS): request
                                                       read end, response write end, stdout
                                                       write end, stderr write end
``fork <slot> <tmpdir>\\n``     watchdog → template     the same, under isolation=request
                                                       (§2.7): the worker's own TMPDIR
``forked <slot> <pid>\\n``      template → watchdog     none
``failed <slot> <reason>\\n``   template → watchdog     none
=============================  ======================  =====================================

A template that lists ``fork-child`` also takes the single fork (§2.6, "Workers that stay the
template's children"):

==================================  ===================  ==================================
``fork-child <slot>\\n``             watchdog → template  the 4 descriptors of ``fork``; the
                                                         worker makes its own TMPDIR (§2.7)
``fork-child <slot> unasked\\n``    watchdog → template  the same; the worker also answers
                                                         the handshake unasked (§2.6)
``exited <pid> exit <code>\\n``     template → watchdog  none; also ``signal <number>``
``reap <pid>\\n``                   watchdog → template  none; no answer
==================================  ===================  ==================================

Anything else is a protocol error, on which a template exits non-zero.
"""

from __future__ import annotations

import errno as _errno
import os
from typing import NamedTuple

MAX_MESSAGE = 512
FORK_FDS = 4


class ControlError(Exception):
    """A malformed control message: the template must exit non-zero (§2.6)."""


class ForkRequest(NamedTuple):
    slot: str  # decimal, as AFTERBURN_WORKER_ID carries it (§2.3)
    tmpdir: str | None  # the worker's private temporary directory (§2.7), or None
    child: bool = False  # fork-child: fork once, the worker stays the template's child
    unasked: bool = False  # fork-child ... unasked: the worker answers the handshake unasked


class Reap(NamedTuple):
    """``reap <pid>``: the watchdog is done with the pid of a worker reported exited."""

    pid: int


def parse(data: bytes, nfds: int, truncated: bool = False) -> ForkRequest | Reap:
    """One record from the watchdog: a fork request of either kind, or a reap."""
    if data.startswith(b"reap "):
        if truncated or nfds:
            raise ControlError(f"reap with descriptors or cut: {data[:80]!r}")
        pid = data[5:-1]
        if not data.endswith(b"\n") or not (pid.isdigit() and pid.isascii()) or pid[:1] == b"0" or len(pid) > 9:
            raise ControlError(f"bad reap: {data[:80]!r}")
        return Reap(int(pid))
    if data.startswith(b"fork-child "):
        rest = data[11:]
        unasked = rest.endswith(b" unasked\n")
        if unasked:
            rest = rest[: -len(b" unasked\n")] + b"\n"
        request = parse_fork(b"fork " + rest, nfds, truncated)
        if request.tmpdir is not None:
            # §2.7: a worker of the single fork makes its own, in AFTERBURN_TMPDIR_ROOT.
            raise ControlError(f"fork-child names no temporary directory: {data[:80]!r}")
        return request._replace(child=True, unasked=unasked)
    return parse_fork(data, nfds, truncated)


def parse_fork(data: bytes, nfds: int, truncated: bool = False) -> ForkRequest:
    """The slot of a fork request and, under isolation=request, the worker's TMPDIR."""
    if truncated:
        raise ControlError(f"control message longer than {MAX_MESSAGE} bytes or with more descriptors than {FORK_FDS}")
    if not data.startswith(b"fork ") or not data.endswith(b"\n"):
        raise ControlError(f"not a fork request: {data[:80]!r}")
    slot, space, path = data[5:-1].partition(b" ")
    tmpdir = None
    if space:
        # §2.7: an absolute path, on the one line of the record.
        if not path.startswith(b"/") or any(c in path for c in b"\r\n\x00"):
            raise ControlError(f"bad temporary directory in fork request: {data[:80]!r}")
        tmpdir = os.fsdecode(path)
    # A slot is 1..workers (§2.3): digits, no sign, no leading zero, not 0 (the template's).
    if not (slot.isdigit() and slot.isascii()) or slot[:1] == b"0" or len(slot) > 9:
        raise ControlError(f"bad slot in fork request: {data[:80]!r}")
    if nfds != FORK_FDS:
        raise ControlError(f"fork request {data[:80]!r} carries {nfds} descriptors, want {FORK_FDS}")
    return ForkRequest(slot.decode(), tmpdir)


def forked(slot: str, pid: int) -> bytes:
    return f"forked {slot} {pid}\n".encode()


def failed(slot: str, reason: str) -> bytes:
    """The failure answer, the reason made one line and cut to fit one record."""
    head = f"failed {slot} ".encode()
    text = " ".join(reason.split()).encode(errors="replace")
    room = MAX_MESSAGE - len(head) - 1
    if len(text) > room:
        text = text[: room - 3].decode(errors="ignore").encode() + b"..."
    return head + text + b"\n"


def exited(pid: int, status: os.waitid_result) -> bytes:
    """The exit report of a fork-child worker, from ``os.waitid``'s account."""
    if status.si_code == os.CLD_EXITED:
        return f"exited {pid} exit {status.si_status}\n".encode()
    return f"exited {pid} signal {status.si_status}\n".encode()


def os_reason(e: OSError) -> str:
    """``EAGAIN: Resource temporarily unavailable``: the errno's name, then its text."""
    if e.errno is None:
        return str(e)
    name = _errno.errorcode.get(e.errno, f"errno {e.errno}")
    return f"{name}: {e.strerror or ''}".rstrip(": ")
