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


def os_reason(e: OSError) -> str:
    """``EAGAIN: Resource temporarily unavailable``: the errno's name, then its text."""
    if e.errno is None:
        return str(e)
    name = _errno.errorcode.get(e.errno, f"errno {e.errno}")
    return f"{name}: {e.strerror or ''}".rstrip(": ")
